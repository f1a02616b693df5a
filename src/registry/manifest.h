// Parsing of what a registry sends: image manifests, manifest lists / OCI indexes,
// image configs, tag lists, token responses. Pure functions over the body (no I/O) so
// the scrape and the fuzz targets share them. Errors say what was missing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cincinnati::registry {

// A blob as a manifest names it; `size` is absent when the manifest gives none usable.
struct Descriptor {
  std::string digest;
  std::optional<uint64_t> size;
  bool operator==(const Descriptor&) const = default;
};

struct ImageManifest {
  Descriptor config;
  std::vector<Descriptor> layers_top_first;  // the manifest lists them bottom first
};
Result<ImageManifest> ParseImageManifest(std::string_view body);

// The reference reads the last entry of a list; with one entry its architecture is the
// release's, with several the release is "multi".
struct ManifestListChoice {
  std::string digest;
  std::string arch;
  std::vector<std::string> entry_digests;  // every entry's, in order ("" when missing)
};
Result<ManifestListChoice> ParseManifestList(std::string_view body);

// The "architecture" of an image config blob.
Result<std::string> ParseImageConfigArch(std::string_view body);

// The string entries of a tag list's "tags" (absent or null: none).
Result<std::vector<std::string>> ParseTagList(std::string_view body);

// "token" or else "access_token" of a bearer-token response.
Result<std::string> ParseTokenResponse(std::string_view body);

}  // namespace cincinnati::registry
