#include "registry/manifest.h"

#include <algorithm>

#include <simdjson.h>

namespace cincinnati::registry {
namespace {

Status Bad(const char* what) { return Status::InvalidArgument(what); }

Result<simdjson::dom::element> Parse(simdjson::dom::parser& parser, std::string_view body, const char* what) {
  simdjson::dom::element doc;
  if (parser.parse(body.data(), body.size()).get(doc)) return Bad(what);
  return doc;
}

std::optional<uint64_t> DescriptorSize(simdjson::dom::element descriptor) {
  uint64_t size;
  if (descriptor["size"].get_uint64().get(size)) return std::nullopt;
  return size;
}

}  // namespace

Result<ImageManifest> ParseImageManifest(std::string_view body) {
  simdjson::dom::parser parser;
  CINCINNATI_ASSIGN_OR_RETURN(simdjson::dom::element doc, Parse(parser, body, "manifest is not JSON"));
  ImageManifest out;
  std::string_view config_digest;
  if (doc["config"]["digest"].get_string().get(config_digest)) return Bad("manifest has no config digest");
  out.config = {std::string(config_digest), DescriptorSize(doc["config"])};
  simdjson::dom::array layers;
  if (!doc["layers"].get(layers)) {
    for (auto layer : layers) {
      std::string_view d;
      if (!layer["digest"].get_string().get(d)) out.layers_top_first.push_back({std::string(d), DescriptorSize(layer)});
    }
  }
  std::reverse(out.layers_top_first.begin(), out.layers_top_first.end());
  return out;
}

Result<ManifestListChoice> ParseManifestList(std::string_view body) {
  simdjson::dom::parser parser;
  CINCINNATI_ASSIGN_OR_RETURN(simdjson::dom::element doc, Parse(parser, body, "manifest list is not JSON"));
  simdjson::dom::array entries;
  if (doc["manifests"].get(entries) || entries.size() == 0) return Bad("manifest list has no entries");
  simdjson::dom::element last = entries.at(entries.size() - 1);
  std::string_view digest;
  if (last["digest"].get_string().get(digest)) return Bad("manifest list entry has no digest");
  ManifestListChoice out{std::string(digest), "multi", {}};
  for (auto entry : entries) {
    std::string_view d;
    out.entry_digests.emplace_back(entry["digest"].get_string().get(d) ? std::string_view() : d);
  }
  if (entries.size() == 1) {
    std::string_view arch;
    if (last["platform"]["architecture"].get_string().get(arch)) return Bad("manifest list entry has no platform");
    out.arch = std::string(arch);
  }
  return out;
}

Result<std::string> ParseImageConfigArch(std::string_view body) {
  simdjson::dom::parser parser;
  CINCINNATI_ASSIGN_OR_RETURN(simdjson::dom::element doc, Parse(parser, body, "image config is not JSON"));
  std::string_view arch;
  if (doc["architecture"].get_string().get(arch)) return Bad("image config has no architecture");
  return std::string(arch);
}

Result<std::vector<std::string>> ParseTagList(std::string_view body) {
  simdjson::dom::parser parser;
  CINCINNATI_ASSIGN_OR_RETURN(simdjson::dom::element doc, Parse(parser, body, "tag list is not JSON"));
  std::vector<std::string> tags;
  simdjson::dom::array list;
  if (!doc["tags"].get(list)) {
    for (auto t : list) {
      std::string_view tag;
      if (!t.get_string().get(tag)) tags.emplace_back(tag);
    }
  }
  return tags;
}

Result<std::string> ParseTokenResponse(std::string_view body) {
  simdjson::dom::parser parser;
  CINCINNATI_ASSIGN_OR_RETURN(simdjson::dom::element doc, Parse(parser, body, "token response is not JSON"));
  std::string_view token;
  if (doc["token"].get_string().get(token) && doc["access_token"].get_string().get(token)) {
    return Bad("token response has no token");
  }
  return std::string(token);
}

}  // namespace cincinnati::registry
