// GraphData: a graph-data directory (version, raw/metadata.json, blocked-edges/,
// channels/) loaded and validated in full before anything touches a graph, so a bad
// file can never leave a half-applied graph behind.
//
// Schema: the `version` file must be SemVer with major 1; a minor above the highest
// one we implement (1.2) is accepted with an info note. Per-file problems of the
// classes file / deserialize / missing_extension / invalid_extension are warnings
// unless their class is disallowed, in which case loading fails naming the file.
// Everything else (missing version file or directory, bad raw metadata JSON) fails
// loading. A channel name without '-' (which crashes the reference) is a warning.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/diagnostics.h"
#include "core/semver.h"
#include "graph-data/documents.h"
#include "graph-data/file_reader.h"

namespace cincinnati::graphdata {

inline constexpr int kSupportedMajor = 1;
inline constexpr int kHighestKnownMinor = 2;

struct RawMetadataEntry {
  Version version;
  std::vector<std::pair<std::string, std::string>> values;  // file order
};

template <typename T>
struct FromFile {
  std::string path;  // relative to the graph-data root
  T document;
};

struct GraphData {
  Version schema_version;
  std::vector<RawMetadataEntry> raw_metadata;
  std::vector<FromFile<UnconditionalBlock>> unconditional_blocks;
  std::vector<FromFile<ConditionalBlock>> conditional_blocks;
  std::vector<FromFile<ChannelDocument>> channels;
};

struct LoadOptions {
  ErrorClassSet disallowed;
};

Result<GraphData> LoadGraphData(const std::filesystem::path& root, const LoadOptions& options,
                                Diagnostics& diagnostics);

// The `version` file on its own (used by the loader and by the linter).
Result<Version> ReadSchemaVersion(const std::filesystem::path& root, Diagnostics& diagnostics);

// Decodes raw/metadata.json text.
Result<std::vector<RawMetadataEntry>> DecodeRawMetadata(const std::string& json, Diagnostics& diagnostics);

}  // namespace cincinnati::graphdata
