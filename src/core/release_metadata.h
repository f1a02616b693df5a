// ReleaseMetadata: the `cincinnati-metadata-v0` document a release payload carries at
// release-manifests/release-metadata.
//
// Required: "kind" (exactly cincinnati-metadata-v0) and "version" (SemVer). Optional:
// "previous" and "next" (arrays of SemVer strings) and "metadata" (string -> string).
// Other keys are ignored. Errors name the key and quote the bad value.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/semver.h"
#include "core/status.h"

namespace simdjson::dom {
class parser;
}

namespace cincinnati {

inline constexpr std::string_view kReleaseMetadataKind = "cincinnati-metadata-v0";

struct ReleaseMetadata {
  Version version;
  std::vector<Version> previous;
  std::vector<Version> next;
  Metadata metadata;
};

Result<ReleaseMetadata> ParseReleaseMetadata(std::string_view json);

// Parses many documents with one simdjson parser: its buffers are made once and grow
// to the largest document parsed (then kept until the parser goes). Not thread-safe.
class ReleaseMetadataParser {
 public:
  ReleaseMetadataParser();
  ~ReleaseMetadataParser();
  ReleaseMetadataParser(const ReleaseMetadataParser&) = delete;
  ReleaseMetadataParser& operator=(const ReleaseMetadataParser&) = delete;

  // As ParseReleaseMetadata. With `payload`, also the document's optional top-level
  // "payload" string (a local release document's extension; empty when absent or not
  // a string), read in the same parse.
  Result<ReleaseMetadata> Parse(std::string_view json, std::string* payload = nullptr);

 private:
  std::unique_ptr<simdjson::dom::parser> parser_;
};

}  // namespace cincinnati
