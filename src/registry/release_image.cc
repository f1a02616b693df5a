#include "registry/release_image.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "core/json_writer.h"

namespace cincinnati::registry {
namespace {

Status Bad(const std::string& what) { return Status::InvalidArgument(what); }

Result<simdjson::dom::element> ParseJson(simdjson::dom::parser& parser, const std::string& text, const char* what) {
  simdjson::dom::element doc;
  if (parser.parse(text).get(doc)) return Bad(fmt::format("{} is not JSON", what));
  return doc;
}

bool IsImageManifest(const std::string& type) { return type == kDockerManifest || type == kOciManifest; }
bool IsManifestList(const std::string& type) { return type == kDockerManifestList || type == kOciIndex; }

// Architecture and layers (top-most first) of an image manifest.
Result<ImageLayers> ImageManifestLayers(RegistryClient& client, const Manifest& m) {
  simdjson::dom::parser parser;
  CINCINNATI_ASSIGN_OR_RETURN(simdjson::dom::element doc, ParseJson(parser, m.body, "manifest"));
  std::string_view config_digest;
  if (doc["config"]["digest"].get_string().get(config_digest)) return Bad("manifest has no config digest");
  ImageLayers out;
  simdjson::dom::array layers;
  if (!doc["layers"].get(layers)) {
    for (auto layer : layers) {
      std::string_view d;
      if (!layer["digest"].get_string().get(d)) out.layers_top_first.insert(out.layers_top_first.begin(), std::string(d));
    }
  }
  CINCINNATI_ASSIGN_OR_RETURN(std::string config, client.GetBlob(std::string(config_digest)));
  simdjson::dom::parser config_parser;
  CINCINNATI_ASSIGN_OR_RETURN(simdjson::dom::element cfg, ParseJson(config_parser, config, "image config"));
  std::string_view arch;
  if (cfg["architecture"].get_string().get(arch)) return Bad("image config has no architecture");
  out.arch = std::string(arch);
  return out;
}

}  // namespace

Result<ImageLayers> InspectImage(RegistryClient& client, const std::string& reference) {
  CINCINNATI_ASSIGN_OR_RETURN(Manifest m, client.GetManifest(reference));
  return InspectManifest(client, m);
}

Result<ImageLayers> InspectManifest(RegistryClient& client, const Manifest& m) {
  if (IsImageManifest(m.media_type)) {
    CINCINNATI_ASSIGN_OR_RETURN(ImageLayers out, ImageManifestLayers(client, m));
    out.digest = m.digest;
    return out;
  }
  if (!IsManifestList(m.media_type)) return Bad(fmt::format("unsupported manifest type '{}'", m.media_type));
  simdjson::dom::parser parser;
  CINCINNATI_ASSIGN_OR_RETURN(simdjson::dom::element doc, ParseJson(parser, m.body, "manifest list"));
  simdjson::dom::array entries;
  if (doc["manifests"].get(entries) || entries.size() == 0) return Bad("manifest list has no entries");
  // The reference reads the last entry of a list; with one entry its architecture is
  // the release's, with several the release is "multi".
  simdjson::dom::element last = entries.at(entries.size() - 1);
  std::string_view child_digest;
  if (last["digest"].get_string().get(child_digest)) return Bad("manifest list entry has no digest");
  std::string arch = "multi";
  if (entries.size() == 1) {
    std::string_view a;
    if (last["platform"]["architecture"].get_string().get(a)) return Bad("manifest list entry has no platform");
    arch = std::string(a);
  }
  CINCINNATI_ASSIGN_OR_RETURN(Manifest child, client.GetManifest(std::string(child_digest)));
  if (!IsImageManifest(child.media_type)) return Bad("manifest list entry is not an image manifest");
  CINCINNATI_ASSIGN_OR_RETURN(ImageLayers out, ImageManifestLayers(client, child));
  out.digest = m.digest;
  out.arch = arch;
  return out;
}

Result<std::optional<ReleaseMetadata>> ReadReleaseMetadata(RegistryClient& client,
                                                           const std::vector<std::string>& layers_top_first) {
  for (const std::string& digest : layers_top_first) {
    CINCINNATI_ASSIGN_OR_RETURN(std::string blob, client.GetBlob(digest));  // a failed download fails the scrape
    auto file = ReadFileFromLayer(blob, kReleaseMetadataPath);
    if (!file.ok() || !file->has_value()) continue;  // undecodable layers are skipped, as upstream
    auto parsed = ParseReleaseMetadata(**file);
    if (parsed.ok()) return std::optional<ReleaseMetadata>(std::move(parsed).value());
  }
  return std::optional<ReleaseMetadata>();
}

Result<ReleaseImage> ReadReleaseImage(RegistryClient& client, const std::string& reference) {
  CINCINNATI_ASSIGN_OR_RETURN(ImageLayers image, InspectImage(client, reference));
  CINCINNATI_ASSIGN_OR_RETURN(auto metadata, ReadReleaseMetadata(client, image.layers_top_first));
  return ReleaseImage{image.digest, image.arch, std::move(metadata)};
}

std::string ReleaseMetadataJson(const ReleaseMetadata& m) {
  auto list = [](const std::vector<Version>& versions) {
    std::string out = "[";
    for (size_t i = 0; i < versions.size(); ++i) out += (i ? "," : "") + JsonString(versions[i].ToString());
    return out + "]";
  };
  std::string out = fmt::format(R"({{"kind":"cincinnati-metadata-v0","version":{},"previous":{},"next":{},"metadata":{{)",
                                JsonString(m.version.ToString()), list(m.previous), list(m.next));
  bool first = true;
  for (const auto& [k, v] : m.metadata) {
    out += (first ? "" : ",") + JsonString(k) + ":" + JsonString(v);
    first = false;
  }
  return out + "}}";
}

namespace {

// Copies the config and layers of an image manifest.
Status CopyBlobs(RegistryClient& from, RegistryClient& to, const Manifest& m) {
  simdjson::dom::parser parser;
  CINCINNATI_ASSIGN_OR_RETURN(simdjson::dom::element doc, ParseJson(parser, m.body, "manifest"));
  std::vector<std::string> digests;
  std::string_view config;
  if (!doc["config"]["digest"].get_string().get(config)) digests.emplace_back(config);
  simdjson::dom::array layers;
  if (!doc["layers"].get(layers)) {
    for (auto l : layers) {
      std::string_view d;
      if (!l["digest"].get_string().get(d)) digests.emplace_back(d);
    }
  }
  for (const std::string& digest : digests) {
    auto has = to.HasBlob(digest);
    if (has.ok() && *has) continue;
    CINCINNATI_ASSIGN_OR_RETURN(std::string blob, from.GetBlob(digest));
    CINCINNATI_ASSIGN_OR_RETURN(std::string pushed, to.PushBlob(blob));
    if (pushed != digest) return Status::Internal(fmt::format("copied blob {} arrived as {}", digest, pushed));
  }
  return Status::OK();
}

}  // namespace

Result<std::string> CopyImage(RegistryClient& from, RegistryClient& to, const std::string& tag) {
  CINCINNATI_ASSIGN_OR_RETURN(Manifest m, from.GetManifest(tag));
  if (IsManifestList(m.media_type)) {
    simdjson::dom::parser parser;
    CINCINNATI_ASSIGN_OR_RETURN(simdjson::dom::element doc, ParseJson(parser, m.body, "manifest list"));
    simdjson::dom::array entries;
    if (doc["manifests"].get(entries)) return Bad("manifest list has no entries");
    for (auto entry : entries) {
      std::string_view digest;
      if (entry["digest"].get_string().get(digest)) return Bad("manifest list entry has no digest");
      CINCINNATI_ASSIGN_OR_RETURN(Manifest child, from.GetManifest(std::string(digest)));
      CINCINNATI_RETURN_IF_ERROR(CopyBlobs(from, to, child));
      CINCINNATI_RETURN_IF_ERROR(to.PushManifest(std::string(digest), child.media_type, child.body).status());
    }
  } else if (IsImageManifest(m.media_type)) {
    CINCINNATI_RETURN_IF_ERROR(CopyBlobs(from, to, m));
  } else {
    return Bad(fmt::format("unsupported manifest type '{}'", m.media_type));
  }
  CINCINNATI_ASSIGN_OR_RETURN(std::string digest, to.PushManifest(tag, m.media_type, m.body));
  if (digest != m.digest) return Status::Internal(fmt::format("copied {} arrived as {}", m.digest, digest));
  return digest;
}

Result<std::string> PushImage(RegistryClient& client, const std::string& tag, const std::string& arch,
                              const std::vector<Layer>& layers, size_t chunk_size) {
  std::string diff_ids, layer_list;
  for (size_t i = 0; i < layers.size(); ++i) {
    CINCINNATI_ASSIGN_OR_RETURN(std::string digest, client.PushBlob(layers[i].gzip, chunk_size));
    diff_ids += (i ? "," : "") + JsonString(layers[i].diff_id);
    layer_list += fmt::format(R"({}{{"mediaType":"{}","size":{},"digest":"{}"}})", i ? "," : "", kDockerLayerGzip,
                              layers[i].gzip.size(), digest);
  }
  std::string config = fmt::format(
      R"({{"architecture":{},"os":"linux","config":{{}},"rootfs":{{"type":"layers","diff_ids":[{}]}}}})",
      JsonString(arch), diff_ids);
  CINCINNATI_ASSIGN_OR_RETURN(std::string config_digest, client.PushBlob(config, chunk_size));
  std::string manifest = fmt::format(
      R"({{"schemaVersion":2,"mediaType":"{}","config":{{"mediaType":"{}","size":{},"digest":"{}"}},"layers":[{}]}})",
      kDockerManifest, kDockerConfig, config.size(), config_digest, layer_list);
  return client.PushManifest(tag, kDockerManifest, manifest);
}

Result<std::string> PushRelease(RegistryClient& client, const std::string& tag, const NewRelease& release,
                                size_t chunk_size) {
  std::vector<LayerEntry> entries{{kReleaseMetadataPath, ReleaseMetadataJson(release.metadata)}};
  for (const LayerEntry& m : release.manifests) entries.push_back({"release-manifests/" + m.path, m.content});
  CINCINNATI_ASSIGN_OR_RETURN(Layer layer, MakeLayer(entries));
  return PushImage(client, tag, release.arch, {layer}, chunk_size);
}

}  // namespace cincinnati::registry
