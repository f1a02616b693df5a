#include "cli/settings.h"

#include <charconv>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "core/strings.h"

namespace cincinnati::cli {
namespace {

// A scalar or an array of scalars as text; nullopt for anything else.
std::optional<std::string> ToText(const toml::node& node) {
  if (auto s = node.as_string()) return s->get();
  if (auto i = node.as_integer()) return std::to_string(i->get());
  if (auto b = node.as_boolean()) return std::string(b->get() ? "true" : "false");
  if (auto f = node.as_floating_point()) return fmt::format("{}", f->get());
  if (auto a = node.as_array()) {
    std::string out;
    for (const toml::node& item : *a) {
      auto text = ToText(item);
      if (!text || item.is_array()) return std::nullopt;
      out += (out.empty() ? "" : ",") + *text;
    }
    return out;
  }
  return std::nullopt;
}

Status Flatten(const toml::table& table, const std::string& prefix, const std::string& file,
               const std::set<std::string>& known, std::map<std::string, std::string>& out) {
  for (const auto& [k, node] : table) {
    std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (auto sub = node.as_table()) {
      CINCINNATI_RETURN_IF_ERROR(Flatten(*sub, key, file, known, out));
      continue;
    }
    if (!known.count(key)) return Status::InvalidArgument(fmt::format("{}: unknown setting '{}'", file, key));
    auto text = ToText(node);
    if (!text) return Status::InvalidArgument(fmt::format("{}: setting '{}' has an unsupported type", file, key));
    out[key] = *text;
  }
  return Status::OK();
}

}  // namespace

Status Settings::MergeToml(const std::string& path, const std::set<std::string>& known,
                           const std::set<std::string>& plugin_tables) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(fmt::format("{}:{}:{}: {}", path, e.source().begin.line, e.source().begin.column,
                                               e.description()));
  }
  toml::table plain;
  for (const auto& [k, node] : root) {
    std::string key(k.str());
    if (plugin_tables.count(key)) {
      const toml::array* tables = node.as_array();
      if (!tables) return Status::InvalidArgument(fmt::format("{}: '{}' must be an array of tables", path, key));
      std::vector<PluginTable>& list = plugins_[key];
      list.clear();
      for (const toml::node& item : *tables) {
        const toml::table* t = item.as_table();
        if (!t) return Status::InvalidArgument(fmt::format("{}: '{}' must hold tables", path, key));
        PluginTable plugin;
        for (const auto& [pk, pv] : *t) {
          auto text = ToText(pv);
          if (!text) {
            return Status::InvalidArgument(fmt::format("{}: [[{}]] setting '{}' has an unsupported type", path, key, pk.str()));
          }
          if (pk.str() == "name") {
            plugin.name = *text;
          } else {
            plugin.settings[std::string(pk.str())] = *text;
          }
        }
        if (plugin.name.empty()) return Status::InvalidArgument(fmt::format("{}: a [[{}]] table has no 'name'", path, key));
        list.push_back(std::move(plugin));
      }
      continue;
    }
    plain.insert(k, node);
  }
  std::map<std::string, std::string> merged;
  CINCINNATI_RETURN_IF_ERROR(Flatten(plain, "", path, known, merged));
  for (auto& [key, value] : merged) {
    values_[key] = std::move(value);
    files_[key] = path;
  }
  return Status::OK();
}

std::string Settings::Describe(const std::string& key) const {
  auto file = files_.find(key);
  return file == files_.end() ? fmt::format("setting '{}'", key) : fmt::format("{}: setting '{}'", file->second, key);
}

Result<bool> Settings::Bool(const std::string& key, bool fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  auto value = ParseBool(key, it->second);
  if (!value.ok()) return Status::InvalidArgument(fmt::format("{}: '{}' is not true or false", Describe(key), it->second));
  return value;
}

std::string Settings::String(const std::string& key, const std::string& fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

Result<uint64_t> Settings::Unsigned(const std::string& key, uint64_t fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const std::string& text = it->second;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc() && end == text.data() + text.size() && !text.empty()) return v;
  return Status::InvalidArgument(fmt::format("{}: '{}' is not a non-negative integer", Describe(key), it->second));
}

std::vector<std::string> Settings::List(const std::string& key) const {
  std::vector<std::string> out;
  auto it = values_.find(key);
  if (it == values_.end()) return out;
  for (std::string_view item : Split(it->second, ',')) {
    item = TrimWhitespace(item);
    if (!item.empty()) out.emplace_back(item);
  }
  return out;
}

const std::vector<PluginTable>& Settings::plugins(const std::string& table) const {
  static const std::vector<PluginTable> kNone;
  auto it = plugins_.find(table);
  return it == plugins_.end() ? kNone : it->second;
}

Result<bool> ParseBool(const std::string& key, const std::string& value) {
  if (value == "true") return true;
  if (value == "false") return false;
  return Status::InvalidArgument(fmt::format("setting '{}': '{}' is not true or false", key, value));
}

}  // namespace cincinnati::cli
