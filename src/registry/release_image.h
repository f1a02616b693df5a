// Release images in a registry: what `cincinnati release new` pushes and what the
// graph builder's registry scrape ("release-scrape-dockerv2") reads.
//
// Reading: the manifest's digest identifies the release. An image manifest's
// architecture comes from its config blob; a manifest list with one entry has that
// entry's architecture, with several it is "multi" and the last entry's image is read.
// Layers are searched top-most first; the first holding a parsable
// release-manifests/release-metadata wins. No such layer means "not a release".
// Every blob is downloaded with its descriptor's size as the limit.
#pragma once

#include <boost/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/release_metadata.h"
#include "registry/client.h"
#include "registry/layer.h"
#include "registry/manifest.h"

namespace cincinnati::registry {

inline constexpr const char* kReleaseMetadataPath = "release-manifests/release-metadata";

struct ReleaseImage {
  std::string digest;  // manifest (or manifest list) digest
  std::string arch;    // "amd64", ..., or "multi"
  std::optional<ReleaseMetadata> metadata;  // nullopt: the image carries no release metadata
};

// The manifest, architecture and layers (top-most first) of `reference`. Layers are
// read only when `read_layers`; `known_metadata` lets a cache skip them.
struct ImageLayers {
  std::string digest;
  std::string arch;
  std::vector<Descriptor> layers_top_first;
};
Result<ImageLayers> InspectImage(RegistryClient& client, const std::string& reference);
// The same for a manifest already fetched (its digest is enough to consult a cache).
Result<ImageLayers> InspectManifest(RegistryClient& client, const Manifest& manifest);

// Finds the release metadata in the layers (top-most first).
Result<std::optional<ReleaseMetadata>> ReadReleaseMetadata(RegistryClient& client,
                                                           const std::vector<Descriptor>& layers_top_first);

Result<ReleaseImage> ReadReleaseImage(RegistryClient& client, const std::string& reference);

// The cincinnati-metadata-v0 document, as JSON and as an object for documents that
// carry it.
std::string ReleaseMetadataJson(const ReleaseMetadata& metadata);
boost::json::object ReleaseMetadataObject(const ReleaseMetadata& metadata);

struct NewRelease {
  ReleaseMetadata metadata;
  std::string arch = "amd64";
  std::vector<LayerEntry> manifests;          // extra files under release-manifests/
  std::vector<LayerEntry> payload_manifests;  // files under manifests/ (the agent applies both)
};

// A complete payload layout: manifests/ (even when empty), release-manifests/ with
// release-metadata and, unless `manifests` has one, an empty image-references
// ImageStream named after the version.
// Builds the image (one layer, config with the architecture, schema2 manifest), pushes
// blobs then manifest under `tag`, and returns the manifest digest.
Result<std::string> PushRelease(RegistryClient& client, const std::string& tag, const NewRelease& release,
                                size_t chunk_size = 0);

// Copies the image `tag` (an image manifest, or a manifest list with its images) from
// one repository to another: blobs the destination lacks, then the manifests, byte for
// byte, so every digest is kept. Returns the digest.
Result<std::string> CopyImage(RegistryClient& from, RegistryClient& to, const std::string& tag);

// Pushes an image of the given layers (bottom-most first) and returns its digest.
Result<std::string> PushImage(RegistryClient& client, const std::string& tag, const std::string& arch,
                              const std::vector<Layer>& layers, size_t chunk_size = 0);

}  // namespace cincinnati::registry
