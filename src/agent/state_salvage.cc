#include "agent/state_salvage.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <map>

#include "env/file_system.h"

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

// Raw parts of a ClusterVersion, by name; status members as "status.<name>".
using Parts = std::map<std::string, std::string>;

// The file's text, refused unless a regular file of at most `max_bytes`.
Result<simdjson::padded_string> LoadBounded(const std::string& path, size_t max_bytes) {
  const env::FileInfo info = env::DefaultFileSystem().Stat(path);
  if (!info.is_regular()) return Status::InvalidArgument(fmt::format("{}: not a readable file", path));
  if (info.size > max_bytes) {
    return Status::TooLarge(fmt::format("{}: {} bytes, too large even to salvage (at most {})", path, info.size, max_bytes));
  }
  auto read = env::DefaultFileSystem().ReadFile(path, max_bytes);
  if (!read.ok()) return Status::IoError(fmt::format("{}: {}", path, read.status().message()));
  return simdjson::padded_string(*read);
}

// The status's members into `parts`, up to the first that cannot be read; the update lists
// are dropped unread (the next poll retrieves them again).
void ReadStatusParts(od::value value, Parts& parts, std::vector<std::string>& dropped) {
  od::object status;
  if (value.get_object().get(status)) return;
  for (auto member : status) {
    std::string_view name;
    od::value member_value;
    if (member.unescaped_key().get(name) || member.value().get(member_value)) break;
    const std::string part = "status." + std::string(name);
    std::string_view raw;
    if (name == "availableUpdates" || name == "conditionalUpdates") {
      dropped.push_back(part + " (retrieved again at the next poll)");
      continue;  // skipped without being built
    }
    if (RawJson(member_value).get(raw)) {
      dropped.push_back(part + " (not valid JSON)");
      break;
    }
    if (raw.size() > kMaxPartBytes) {
      dropped.push_back(fmt::format("{} ({} bytes)", part, raw.size()));
      continue;
    }
    parts[part] = std::string(raw);
  }
}

// The top-level members into `parts`, up to the first that cannot be read.
void ReadParts(od::object& top, Parts& parts, std::vector<std::string>& dropped) {
  for (auto field : top) {
    std::string_view key;
    od::value value;
    if (field.unescaped_key().get(key) || field.value().get(value)) break;  // the rest is unreadable
    if (key != "status") {
      std::string_view raw;
      if (!RawJson(value).get(raw) && raw.size() <= kMaxPartBytes) parts[std::string(key)] = std::string(raw);
      continue;
    }
    ReadStatusParts(value, parts, dropped);
  }
}

// A document of the parts that still read as a ClusterVersion: metadata and spec first
// (without them there is nothing to salvage), then each status member that keeps it readable.
Result<JsonValue> Reassemble(const std::string& path, const Parts& parts, std::vector<std::string>& dropped) {
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
  for (const auto& [part, raw] : parts) {
    if (part.rfind("status.", 0) != 0) continue;
    auto value = ParseJson(raw, kMaxPartBytes);
    if (!value.ok()) {
      dropped.push_back(fmt::format("{} ({})", part, Describe(value.status())));
      continue;
    }
    JsonValue status = *FindMember(document, "status");
    SetMember(status, part.substr(7), std::move(value).value());
    JsonValue trial = document;
    SetMember(trial, "status", status);
    if (auto cv = FromJson(trial); !cv.ok()) {
      dropped.push_back(fmt::format("{} ({})", part, Describe(cv.status())));
      continue;
    }
    document = std::move(trial);
  }
  return document;
}

}  // namespace

Result<SalvagedClusterVersion> SalvageClusterVersion(const std::string& path, size_t max_bytes) {
  CINCINNATI_ASSIGN_OR_RETURN(simdjson::padded_string text, LoadBounded(path, max_bytes));
  od::parser parser;
  od::document doc;
  od::object top;
  if (parser.iterate(text).get(doc) || doc.get_object().get(top)) {
    return Status::InvalidArgument(fmt::format("{}: not a JSON object", path));
  }
  Parts parts;
  SalvagedClusterVersion out;
  ReadParts(top, parts, out.dropped);
  CINCINNATI_ASSIGN_OR_RETURN(JsonValue document, Reassemble(path, parts, out.dropped));
  CINCINNATI_ASSIGN_OR_RETURN(out.cv, FromJson(document));
  return out;
}

}  // namespace cincinnati::agent
