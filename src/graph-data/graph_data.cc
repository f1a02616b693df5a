#include "graph-data/graph_data.h"

#include <map>
#include <set>

#include <fmt/format.h>
#include <simdjson.h>

#include "core/internal_metadata.h"
#include "env/file_system.h"
#include "graph-data/yaml_scalar.h"

namespace fs = std::filesystem;

namespace cincinnati::graphdata {
namespace {

// Applies the tolerance policy to one problem: a warning, or the run's error.
Status Report(const FileProblem& p, const LoadOptions& options, Diagnostics& diagnostics) {
  if (options.disallowed.count(p.error_class)) {
    return Status::InvalidArgument(fmt::format("{}: {} error: {}", p.path, ErrorClassName(p.error_class), p.message));
  }
  diagnostics.Warn(p.path, fmt::format("{} error (tolerated): {}", ErrorClassName(p.error_class), p.message));
  return Status::OK();
}

Status ReportAll(const std::vector<FileProblem>& problems, const LoadOptions& options, Diagnostics& diagnostics) {
  for (const auto& p : problems) CINCINNATI_RETURN_IF_ERROR(Report(p, options, diagnostics));
  return Status::OK();
}

Status LoadBlockedEdges(const fs::path& root, const LoadOptions& options, Diagnostics& diagnostics,
                        GraphData& data) {
  std::vector<FileProblem> problems;
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<YamlFile> files, ReadYamlDirectory(root, "blocked-edges", &problems));
  CINCINNATI_RETURN_IF_ERROR(ReportAll(problems, options, diagnostics));
  for (const YamlFile& file : files) {
    auto doc = ParseYaml(file.content);
    if (!doc.ok()) {
      CINCINNATI_RETURN_IF_ERROR(Report({ErrorClass::kDeserialize, file.path, doc.status().message()}, options, diagnostics));
      continue;
    }
    // A file that fits one shape is never an error for the other.
    auto unconditional = DecodeUnconditionalBlock(*doc);
    if (unconditional.ok()) {
      data.unconditional_blocks.push_back({file.path, std::move(unconditional).value()});
      continue;
    }
    auto conditional = DecodeConditionalBlock(*doc);
    if (conditional.ok()) {
      data.conditional_blocks.push_back({file.path, std::move(conditional).value()});
      continue;
    }
    std::string why = fmt::format("fits neither blocked-edge shape: as an unconditional block: {}; as a risk: {}",
                                  unconditional.status().message(), conditional.status().message());
    CINCINNATI_RETURN_IF_ERROR(Report({ErrorClass::kDeserialize, file.path, why}, options, diagnostics));
  }
  return Status::OK();
}

Status LoadChannels(const fs::path& root, const LoadOptions& options, Diagnostics& diagnostics, GraphData& data) {
  std::vector<FileProblem> problems;
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<YamlFile> files, ReadYamlDirectory(root, "channels", &problems));
  CINCINNATI_RETURN_IF_ERROR(ReportAll(problems, options, diagnostics));
  for (const YamlFile& file : files) {
    auto doc = ParseYaml(file.content);
    Result<ChannelDocument> channel = doc.ok() ? DecodeChannel(*doc) : Result<ChannelDocument>(doc.status());
    if (!channel.ok()) {
      // The whole file is skipped, as the reference does with one bad version in it.
      CINCINNATI_RETURN_IF_ERROR(
          Report({ErrorClass::kDeserialize, file.path, channel.status().message()}, options, diagnostics));
      continue;
    }
    if (channel->name.find('-') == std::string::npos) {
      // The reference crashes sorting such a name; we sort it before every stream.
      diagnostics.Warn(file.path, fmt::format("channel name '{}' has no '-' (expected <phase>-<major>.<minor>)",
                                              channel->name));
    }
    if (Status st = ValidateChannelTarget(*channel); !st.ok()) return st.WithContext(file.path);
    data.channels.push_back({file.path, std::move(channel).value()});
  }
  return Status::OK();
}

Status LoadManagingFiles(const fs::path& root, const LoadOptions& options, Diagnostics& diagnostics, GraphData& data) {
  std::vector<FileProblem> problems;
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<YamlFile> files, ReadYamlDirectory(root, "channels", &problems));
  CINCINNATI_RETURN_IF_ERROR(ReportAll(problems, options, diagnostics));
  std::map<std::string, std::string> owner;  // channel -> managing file
  for (const YamlFile& file : files) {
    auto doc = ParseYaml(file.content);
    if (!doc.ok()) return doc.status().WithContext(file.path);
    auto managing = DecodeManagingFile(*doc);
    if (!managing.ok()) return managing.status().WithContext(file.path);
    for (const ManagedChannel& c : managing->channels) {
      auto [it, inserted] = owner.emplace(c.name, file.path);
      if (!inserted) {
        return Status::InvalidArgument(
            fmt::format("{}: channel '{}' is also managed by {}", file.path, c.name, it->second));
      }
    }
    data.managing_files.push_back({file.path, std::move(managing).value()});
  }
  return Status::OK();
}

Status LoadHotfixes(const fs::path& root, const LoadOptions& options, Diagnostics& diagnostics, GraphData& data) {
  if (!env::DefaultFileSystem().IsDirectory(root / "hotfixes")) return Status::OK();  // optional
  std::vector<FileProblem> problems;
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<YamlFile> files, ReadYamlDirectory(root, "hotfixes", &problems));
  CINCINNATI_RETURN_IF_ERROR(ReportAll(problems, options, diagnostics));
  std::set<std::string> channels;
  for (const auto& c : data.channels) channels.insert(c.document.name);
  for (const auto& m : data.managing_files) {
    for (const ManagedChannel& c : m.document.channels) channels.insert(c.name);
  }
  std::map<std::string, std::string> owner;  // hotfix name -> file
  for (const YamlFile& file : files) {
    auto doc = ParseYaml(file.content);
    if (!doc.ok()) return doc.status().WithContext(file.path);
    std::string stem = fs::path(file.path).stem().string();
    auto hotfix = DecodeHotfix(*doc, stem);
    if (!hotfix.ok()) return hotfix.status().WithContext(file.path);
    auto [it, inserted] = owner.emplace(hotfix->rule.name, file.path);
    if (!inserted) {
      return Status::InvalidArgument(
          fmt::format("{}: hotfix '{}' is also defined by {}", file.path, hotfix->rule.name, it->second));
    }
    for (const std::string& c : hotfix->rule.channels) {
      if (!channels.count(c)) {
        return Status::InvalidArgument(fmt::format("{}: channel '{}' is not defined under channels/", file.path, c));
      }
    }
    for (const Version& release : hotfix->releases) {
      for (const auto& c : data.channels) {
        for (const Version& v : c.document.versions) {
          if (v == release) {
            diagnostics.Warn(file.path, fmt::format("release {} is also listed by {}; it stays visible only to the "
                                                    "hotfix's clusters", release.ToString(), c.path));
          }
        }
      }
    }
    data.hotfixes.push_back({file.path, std::move(hotfix).value()});
  }
  return Status::OK();
}

}  // namespace

Result<Version> ReadSchemaVersion(const fs::path& root, Diagnostics& diagnostics) {
  CINCINNATI_ASSIGN_OR_RETURN(std::string text, ReadFileToString(root / "version", "version"));
  auto version = Version::Parse(text);
  if (!version.ok()) return version.status().WithContext("version");
  if (version->major() != 1 && version->major() != 2) {
    return Status::InvalidArgument(
        fmt::format("version: unrecognized graph-data version {} (supported: 1.x and 2.x)", version->ToString()));
  }
  uint64_t highest = version->major() == 1 ? kHighestKnownMinor1 : kHighestKnownMinor2;
  if (version->minor() > highest) {
    diagnostics.Info("version", fmt::format("graph-data version {} is newer than {}.{}.0; reading it as {}.{}.0",
                                            version->ToString(), version->major(), highest, version->major(), highest));
  }
  return version;
}

Result<std::vector<RawMetadataEntry>> DecodeRawMetadata(const std::string& json, Diagnostics& diagnostics) {
  constexpr std::string_view kFile = "raw/metadata.json";
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::element doc;
  if (auto err = parser.parse(padded).get(doc)) {
    return Status::InvalidArgument(fmt::format("{}: invalid JSON: {}", kFile, simdjson::error_message(err)));
  }
  simdjson::dom::object top;
  if (doc.get_object().get(top)) {
    return Status::InvalidArgument(fmt::format("{}: expected an object of version -> metadata", kFile));
  }
  std::vector<RawMetadataEntry> entries;
  for (auto field : top) {
    simdjson::dom::object values;
    if (field.value.get_object().get(values)) {
      return Status::InvalidArgument(fmt::format("{}: '{}': expected an object of strings", kFile, field.key));
    }
    RawMetadataEntry entry;
    for (auto kv : values) {
      std::string_view value;
      if (kv.value.get_string().get(value)) {
        return Status::InvalidArgument(fmt::format("{}: '{}': '{}' must be a string", kFile, field.key, kv.key));
      }
      if (IsReservedKey(kv.key)) {  // only the graph builder writes these; a value here could block the graph
        diagnostics.Warn(std::string(kFile), fmt::format("'{}': key '{}' is reserved for the graph builder (value skipped)",
                                                         field.key, kv.key));
        continue;
      }
      entry.values.emplace_back(std::string(kv.key), std::string(value));
    }
    auto version = Version::Parse(field.key);
    if (!version.ok()) {
      diagnostics.Warn(std::string(kFile), version.status().message() + " (entry skipped)");
      continue;
    }
    entry.version = std::move(version).value();
    entries.push_back(std::move(entry));
  }
  return entries;
}

Result<GraphData> LoadGraphData(const fs::path& root, const LoadOptions& options, Diagnostics& diagnostics) {
  GraphData data;
  CINCINNATI_ASSIGN_OR_RETURN(data.schema_version, ReadSchemaVersion(root, diagnostics));
  CINCINNATI_ASSIGN_OR_RETURN(std::string raw, ReadFileToString(root / "raw/metadata.json", "raw/metadata.json"));
  CINCINNATI_ASSIGN_OR_RETURN(data.raw_metadata, DecodeRawMetadata(raw, diagnostics));
  CINCINNATI_RETURN_IF_ERROR(LoadBlockedEdges(root, options, diagnostics, data));
  if (data.phased()) {
    CINCINNATI_RETURN_IF_ERROR(LoadManagingFiles(root, options, diagnostics, data));
  } else {
    CINCINNATI_RETURN_IF_ERROR(LoadChannels(root, options, diagnostics, data));
  }
  CINCINNATI_RETURN_IF_ERROR(LoadHotfixes(root, options, diagnostics, data));
  return data;
}

}  // namespace cincinnati::graphdata
