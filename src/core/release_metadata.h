// ReleaseMetadata: the `cincinnati-metadata-v0` document a release payload carries at
// release-manifests/release-metadata.
//
// Required: "kind" (exactly cincinnati-metadata-v0) and "version" (SemVer). Optional:
// "previous" and "next" (arrays of SemVer strings) and "metadata" (string -> string).
// Other keys are ignored. Errors name the key and quote the bad value.
#pragma once

#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/semver.h"
#include "core/status.h"

namespace cincinnati {

inline constexpr std::string_view kReleaseMetadataKind = "cincinnati-metadata-v0";

struct ReleaseMetadata {
  Version version;
  std::vector<Version> previous;
  std::vector<Version> next;
  Metadata metadata;
};

Result<ReleaseMetadata> ParseReleaseMetadata(std::string_view json);

}  // namespace cincinnati
