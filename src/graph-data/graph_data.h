// GraphData: a graph-data directory (version, raw/metadata.json, blocked-edges/,
// channels/, optional hotfixes/) loaded and validated in full before anything touches a graph, so a bad
// file can never leave a half-applied graph behind.
//
// Schema: the `version` file must be SemVer with major 1 or 2; a minor above the
// highest one we implement is accepted with an info note. In 2.x, channels/ holds
// managing files (see managing_file.h), and any violation in one fails loading. Per-file problems of the
// classes file / deserialize / missing_extension / invalid_extension are warnings
// unless their class is disallowed, in which case loading fails naming the file.
// Everything else (missing version file or directory, bad raw metadata JSON) fails
// loading. A channel name without '-' (which crashes the reference) is a warning.
// Hotfix files (hotfix.h) must decode, have unique names and name existing channels.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/diagnostics.h"
#include "core/semver.h"
#include "graph-data/documents.h"
#include "graph-data/file_reader.h"
#include "graph-data/hotfix.h"
#include "graph-data/managing_file.h"

namespace cincinnati::graphdata {

// Schema 1.x (channels files) up to 1.2, and 2.x (managing files with phased rollouts)
// up to 2.0; a newer minor of a known major is read as the highest known one.
inline constexpr int kHighestKnownMinor1 = 2;
inline constexpr int kHighestKnownMinor2 = 0;

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
  std::vector<FromFile<ChannelDocument>> channels;         // schema 1.x
  std::vector<FromFile<ManagingFile>> managing_files;      // schema 2.x
  std::vector<FromFile<Hotfix>> hotfixes;
  bool phased() const { return schema_version.major() == 2; }
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
