#include "registry/release_image.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "core/json.h"
#include "registry/manifest.h"

namespace cincinnati::registry {
namespace {

Status Bad(const std::string& what) { return Status::InvalidArgument(what); }

bool IsImageManifest(const std::string& type) { return type == kDockerManifest || type == kOciManifest; }
bool IsManifestList(const std::string& type) { return type == kDockerManifestList || type == kOciIndex; }

// Architecture and layers (top-most first) of an image manifest.
Result<ImageLayers> ImageManifestLayers(RegistryClient& client, const Manifest& m) {
  CINCINNATI_ASSIGN_OR_RETURN(ImageManifest manifest, ParseImageManifest(m.body));
  CINCINNATI_ASSIGN_OR_RETURN(std::string config, client.GetBlob(manifest.config.digest, manifest.config.size));
  CINCINNATI_ASSIGN_OR_RETURN(std::string arch, ParseImageConfigArch(config));
  ImageLayers out;
  out.layers_top_first = std::move(manifest.layers_top_first);
  out.arch = std::move(arch);
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
  CINCINNATI_ASSIGN_OR_RETURN(ManifestListChoice choice, ParseManifestList(m.body));
  CINCINNATI_ASSIGN_OR_RETURN(Manifest child, client.GetManifest(choice.digest));
  if (!IsImageManifest(child.media_type)) return Bad("manifest list entry is not an image manifest");
  CINCINNATI_ASSIGN_OR_RETURN(ImageLayers out, ImageManifestLayers(client, child));
  out.digest = m.digest;
  out.arch = choice.arch;
  return out;
}

Result<std::optional<ReleaseMetadata>> ReadReleaseMetadata(RegistryClient& client,
                                                           const std::vector<Descriptor>& layers_top_first) {
  for (const Descriptor& layer : layers_top_first) {
    // A failed download fails the scrape.
    CINCINNATI_ASSIGN_OR_RETURN(std::string blob, client.GetBlob(layer.digest, layer.size));
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

boost::json::object ReleaseMetadataObject(const ReleaseMetadata& m) {
  auto list = [](const std::vector<Version>& versions) {
    boost::json::array out;
    for (const Version& v : versions) out.push_back(boost::json::value(v.ToString()));
    return out;
  };
  boost::json::object metadata;
  for (const auto& [k, v] : m.metadata) metadata[k] = v;
  return boost::json::object{{"kind", "cincinnati-metadata-v0"},
                             {"version", m.version.ToString()},
                             {"previous", list(m.previous)},
                             {"next", list(m.next)},
                             {"metadata", std::move(metadata)}};
}

std::string ReleaseMetadataJson(const ReleaseMetadata& m) { return WriteJson(ReleaseMetadataObject(m)); }

namespace {

// Copies the config and layers of an image manifest.
Status CopyBlobs(RegistryClient& from, RegistryClient& to, const Manifest& m) {
  CINCINNATI_ASSIGN_OR_RETURN(ImageManifest manifest, ParseImageManifest(m.body));
  std::vector<Descriptor> blobs = std::move(manifest.layers_top_first);
  blobs.push_back(std::move(manifest.config));
  for (const Descriptor& d : blobs) {
    auto has = to.HasBlob(d.digest);
    if (has.ok() && *has) continue;
    CINCINNATI_ASSIGN_OR_RETURN(std::string blob, from.GetBlob(d.digest, d.size));
    CINCINNATI_ASSIGN_OR_RETURN(std::string pushed, to.PushBlob(blob));
    if (pushed != d.digest) return Status::Internal(fmt::format("copied blob {} arrived as {}", d.digest, pushed));
  }
  return Status::OK();
}

}  // namespace

Result<std::string> CopyImage(RegistryClient& from, RegistryClient& to, const std::string& tag) {
  CINCINNATI_ASSIGN_OR_RETURN(Manifest m, from.GetManifest(tag));
  if (IsManifestList(m.media_type)) {
    CINCINNATI_ASSIGN_OR_RETURN(ManifestListChoice list, ParseManifestList(m.body));
    for (const std::string& digest : list.entry_digests) {
      if (digest.empty()) return Bad("manifest list entry has no digest");
      CINCINNATI_ASSIGN_OR_RETURN(Manifest child, from.GetManifest(digest));
      CINCINNATI_RETURN_IF_ERROR(CopyBlobs(from, to, child));
      CINCINNATI_RETURN_IF_ERROR(to.PushManifest(digest, child.media_type, child.body).status());
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
  boost::json::array diff_ids, layer_list;
  for (const Layer& layer : layers) {
    CINCINNATI_ASSIGN_OR_RETURN(std::string digest, client.PushBlob(layer.gzip, chunk_size));
    diff_ids.push_back(boost::json::value(layer.diff_id));
    layer_list.push_back(boost::json::object{{"mediaType", kDockerLayerGzip}, {"size", layer.gzip.size()}, {"digest", digest}});
  }
  const std::string config = WriteJson(boost::json::object{
      {"architecture", arch},
      {"os", "linux"},
      {"config", boost::json::object()},
      {"rootfs", boost::json::object{{"type", "layers"}, {"diff_ids", std::move(diff_ids)}}}});
  CINCINNATI_ASSIGN_OR_RETURN(std::string config_digest, client.PushBlob(config, chunk_size));
  const std::string manifest = WriteJson(boost::json::object{
      {"schemaVersion", 2},
      {"mediaType", kDockerManifest},
      {"config", boost::json::object{{"mediaType", kDockerConfig}, {"size", config.size()}, {"digest", config_digest}}},
      {"layers", std::move(layer_list)}});
  return client.PushManifest(tag, kDockerManifest, manifest);
}

Result<std::string> PushRelease(RegistryClient& client, const std::string& tag, const NewRelease& release,
                                size_t chunk_size) {
  std::vector<LayerEntry> entries{{kReleaseMetadataPath, ReleaseMetadataJson(release.metadata)},
                                  {"manifests", "", /*directory=*/true}};
  bool references = false;
  for (const LayerEntry& m : release.manifests) {
    entries.push_back({"release-manifests/" + m.path, m.content});
    references |= m.path == "image-references";
  }
  if (!references) {
    entries.push_back({"release-manifests/image-references",
                       WriteJson(boost::json::object{
                           {"kind", "ImageStream"},
                           {"apiVersion", "image.openshift.io/v1"},
                           {"metadata", boost::json::object{{"name", release.metadata.version.ToString()}}},
                           {"spec", boost::json::object{{"tags", boost::json::array()}}}}) +
                           "\n"});
  }
  for (const LayerEntry& m : release.payload_manifests) entries.push_back({"manifests/" + m.path, m.content});
  CINCINNATI_ASSIGN_OR_RETURN(Layer layer, MakeLayer(entries));
  return PushImage(client, tag, release.arch, {layer}, chunk_size);
}

}  // namespace cincinnati::registry
