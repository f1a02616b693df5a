#include "core/plugin_settings.h"

#include <charconv>

#include <fmt/format.h>

#include "core/strings.h"

namespace cincinnati {

Status PluginSettings::CheckKnown(const std::set<std::string>& known) const {
  for (const auto& [key, value] : settings_) {
    if (!known.count(key)) return Status::InvalidArgument(fmt::format("plugin '{}': unknown setting '{}'", name_, key));
  }
  return Status::OK();
}

std::string PluginSettings::Get(const std::string& key, std::string fallback) const {
  auto it = settings_.find(key);
  return it == settings_.end() ? fallback : it->second;
}

Result<bool> PluginSettings::Bool(const std::string& key, bool fallback) const {
  auto it = settings_.find(key);
  if (it == settings_.end()) return fallback;
  if (it->second == "true") return true;
  if (it->second == "false") return false;
  return Status::InvalidArgument(fmt::format("setting '{}.{}': '{}' is not true or false", name_, key, it->second));
}

Result<uint64_t> PluginSettings::Unsigned(const std::string& key, uint64_t fallback) const {
  auto it = settings_.find(key);
  if (it == settings_.end()) return fallback;
  const std::string& text = it->second;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc() && end == text.data() + text.size() && !text.empty()) return v;
  return Status::InvalidArgument(
      fmt::format("setting '{}.{}': '{}' is not a non-negative integer", name_, key, text));
}

std::vector<std::string> PluginSettings::List(const std::string& key, std::vector<std::string> fallback) const {
  auto it = settings_.find(key);
  if (it == settings_.end() || TrimWhitespace(it->second).empty()) return fallback;
  std::vector<std::string> out;
  for (std::string_view item : Split(it->second, ',')) {
    if (!TrimWhitespace(item).empty()) out.emplace_back(TrimWhitespace(item));
  }
  return out;
}

}  // namespace cincinnati
