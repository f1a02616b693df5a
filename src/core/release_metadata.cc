#include "core/release_metadata.h"

#include <memory>

#include <fmt/format.h>
#include <simdjson.h>

namespace cincinnati {
namespace {

Status Bad(std::string m) { return Status::InvalidArgument(std::move(m)); }

Result<std::vector<Version>> ReadVersionList(simdjson::dom::object o, std::string_view key) {
  std::vector<Version> out;
  simdjson::dom::element e;
  if (o.at_key(key).get(e)) return out;  // absent: empty list
  simdjson::dom::array list;
  if (e.get_array().get(list)) return Bad(fmt::format("'{}' must be an array of versions", key));
  out.reserve(list.size());
  size_t i = 0;
  for (auto item : list) {
    std::string_view text;
    if (item.get_string().get(text)) return Bad(fmt::format("'{}[{}]' must be a string", key, i));
    auto v = Version::Parse(text);
    if (!v.ok()) return v.status().WithContext(fmt::format("'{}[{}]'", key, i));
    out.push_back(std::move(v).value());
    ++i;
  }
  return out;
}

}  // namespace

Result<ReleaseMetadata> ParseReleaseMetadata(std::string_view json) {
  ReleaseMetadataParser parser;
  return parser.Parse(json);
}

ReleaseMetadataParser::ReleaseMetadataParser() : parser_(std::make_unique<simdjson::dom::parser>()) {}
ReleaseMetadataParser::~ReleaseMetadataParser() = default;

Result<ReleaseMetadata> ReleaseMetadataParser::Parse(std::string_view json, std::string* payload) {
  if (payload) payload->clear();
  simdjson::padded_string padded(json.data(), json.size());
  simdjson::dom::element doc;
  if (auto err = parser_->parse(padded).get(doc)) {
    return Bad(fmt::format("invalid JSON: {}", simdjson::error_message(err)));
  }
  simdjson::dom::object o;
  if (doc.get_object().get(o)) return Bad("release metadata must be a JSON object");

  std::string_view kind;
  if (o["kind"].get_string().get(kind)) return Bad("missing string 'kind'");
  if (kind != kReleaseMetadataKind) {
    return Bad(fmt::format("'kind' must be '{}', got '{}'", kReleaseMetadataKind, kind));
  }
  std::string_view version_text;
  if (o["version"].get_string().get(version_text)) return Bad("missing string 'version'");
  auto version = Version::Parse(version_text);
  if (!version.ok()) return version.status().WithContext("'version'");

  ReleaseMetadata release;
  release.version = std::move(version).value();
  std::string_view payload_text;
  if (payload && !o["payload"].get_string().get(payload_text)) payload->assign(payload_text);
  CINCINNATI_ASSIGN_OR_RETURN(release.previous, ReadVersionList(o, "previous"));
  CINCINNATI_ASSIGN_OR_RETURN(release.next, ReadVersionList(o, "next"));

  simdjson::dom::element md;
  if (!o["metadata"].get(md)) {
    simdjson::dom::object map;
    if (md.get_object().get(map)) return Bad("'metadata' must be an object of strings");
    for (auto field : map) {
      std::string_view value;
      if (field.value.get_string().get(value)) {
        return Bad(fmt::format("metadata '{}' must be a string", field.key));
      }
      release.metadata.insert_or_assign(std::string(field.key), std::string(value));
    }
  }
  return release;
}

}  // namespace cincinnati
