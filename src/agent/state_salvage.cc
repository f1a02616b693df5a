#include "agent/state_salvage.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <sys/stat.h>

#include <map>

namespace cincinnati::agent {

using kube::ParseJson;
using kube::JsonObject;
using kube::FindMember;
using kube::SetMember;
namespace {

namespace od = simdjson::ondemand;

constexpr size_t kMaxPartBytes = size_t{16} << 20;

// The JSON text of an on-demand value, whatever its type.
simdjson::simdjson_result<std::string_view> RawJson(od::value value) {
  od::json_type type;
  if (auto error = value.type().get(type)) return error;
  if (type == od::json_type::object) {
    od::object o;
    if (auto error = value.get_object().get(o)) return error;
    return o.raw_json();
  }
  if (type == od::json_type::array) {
    od::array a;
    if (auto error = value.get_array().get(a)) return error;
    return a.raw_json();
  }
  return value.raw_json_token();
}

std::string Describe(const Status& s) {
  std::string text = s.message();
  return text.size() > 200 ? text.substr(0, 200) + "..." : text;
}

}  // namespace

Result<SalvagedClusterVersion> SalvageClusterVersion(const std::string& path, size_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(fmt::format("{}: not a readable file", path));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return Status::TooLarge(fmt::format("{}: {} bytes, too large even to salvage (at most {})", path, st.st_size, max_bytes));
  }
  simdjson::padded_string text;
  if (auto error = simdjson::padded_string::load(path).get(text)) {
    return Status::IoError(fmt::format("{}: {}", path, simdjson::error_message(error)));
  }
  od::parser parser;
  od::document doc;
  od::object top;
  if (parser.iterate(text).get(doc) || doc.get_object().get(top)) {
    return Status::InvalidArgument(fmt::format("{}: not a JSON object", path));
  }
  // Raw parts, by name; status members as "status.<name>".
  std::map<std::string, std::string> parts;
  SalvagedClusterVersion out;
  for (auto field : top) {
    std::string_view key;
    od::value value;
    if (field.unescaped_key().get(key) || field.value().get(value)) break;  // the rest is unreadable
    if (key != "status") {
      std::string_view raw;
      if (!RawJson(value).get(raw) && raw.size() <= kMaxPartBytes) parts[std::string(key)] = std::string(raw);
      continue;
    }
    od::object status;
    if (value.get_object().get(status)) continue;
    for (auto member : status) {
      std::string_view name;
      od::value member_value;
      if (member.unescaped_key().get(name) || member.value().get(member_value)) break;
      const std::string part = "status." + std::string(name);
      std::string_view raw;
      if (name == "availableUpdates" || name == "conditionalUpdates") {
        out.dropped.push_back(part + " (retrieved again at the next poll)");
        continue;  // skipped without being built
      }
      if (RawJson(member_value).get(raw)) {
        out.dropped.push_back(part + " (not valid JSON)");
        break;
      }
      if (raw.size() > kMaxPartBytes) {
        out.dropped.push_back(fmt::format("{} ({} bytes)", part, raw.size()));
        continue;
      }
      parts[part] = std::string(raw);
    }
  }

  // metadata and spec first: without them there is nothing to salvage.
  JsonValue document = JsonObject();
  for (const char* key : {"apiVersion", "kind", "metadata", "spec"}) {
    auto it = parts.find(key);
    if (it == parts.end()) continue;
    auto value = ParseJson(it->second, kMaxPartBytes);
    if (value.ok()) SetMember(document, key, std::move(value).value());
  }
  SetMember(document, "status", JsonValue(JsonObject()));
  if (auto base = FromJson(document); !base.ok()) {
    return Status::InvalidArgument(fmt::format("{}: its metadata and spec cannot be read: {}", path, Describe(base.status())));
  }
  // Then each status member, kept when the document still reads with it.
  for (const auto& [part, raw] : parts) {
    if (part.rfind("status.", 0) != 0) continue;
    auto value = ParseJson(raw, kMaxPartBytes);
    if (!value.ok()) {
      out.dropped.push_back(fmt::format("{} ({})", part, Describe(value.status())));
      continue;
    }
    JsonValue status = *FindMember(document, "status");
    SetMember(status, part.substr(7), std::move(value).value());
    JsonValue trial = document;
    SetMember(trial, "status", status);
    if (auto cv = FromJson(trial); !cv.ok()) {
      out.dropped.push_back(fmt::format("{} ({})", part, Describe(cv.status())));
      continue;
    }
    document = std::move(trial);
  }
  CINCINNATI_ASSIGN_OR_RETURN(out.cv, FromJson(document));
  return out;
}

}  // namespace cincinnati::agent
