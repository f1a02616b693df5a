#include "graph-data/lint.h"

#include <map>
#include <set>

#include <fmt/format.h>
#include <re2/re2.h>

#include "env/file_system.h"
#include "graph-data/documents.h"
#include "graph-data/file_reader.h"
#include "graph-data/graph_data.h"
#include "graph-data/hotfix.h"
#include "graph-data/yaml_scalar.h"

namespace fs = std::filesystem;

namespace cincinnati::graphdata {
namespace {

std::string Stem(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  return name.substr(0, name.rfind('.'));
}

// Why a channel name would not work, or "" if it works. Nodes list their channels
// comma-separated, so a ',' in a name reads back as two channels.
std::string ChannelNameProblem(const std::string& name) {
  if (name.find(',') != std::string::npos) {
    return fmt::format("channel name '{}' contains ',' (nodes list channels comma-separated)", name);
  }
  if (name.find('-') == std::string::npos) {
    return fmt::format("channel name '{}' has no '-' (expected <phase>-<major>.<minor>)", name);
  }
  return "";
}

void CheckVersionAndRawMetadata(const fs::path& root, Diagnostics& out) {
  Diagnostics notes;
  auto version = ReadSchemaVersion(root, notes);
  if (!version.ok()) out.Error("version", version.status().message());
  for (const auto& d : notes.items()) out.Add(d.severity, d.location, d.message);

  auto text = ReadFileToString(root / "raw/metadata.json", "raw/metadata.json");
  if (!text.ok()) {
    out.Error("raw/metadata.json", "file is missing or unreadable");
    return;
  }
  Diagnostics skipped;
  auto raw = DecodeRawMetadata(*text, skipped);
  if (!raw.ok()) out.Error("raw/metadata.json", raw.status().message());
  for (const auto& d : skipped.items()) out.Error(d.location, d.message);
}

// Reads a directory; every reader problem is an error, as in the graph-data CI.
std::vector<YamlFile> ReadAll(const fs::path& root, std::string_view subdir, Diagnostics& out) {
  std::vector<FileProblem> problems;
  auto files = ReadYamlDirectory(root, subdir, &problems);
  if (!files.ok()) {
    out.Error(std::string(subdir) + "/", files.status().message());
    return {};
  }
  for (const auto& p : problems) out.Error(p.path, fmt::format("{}: {}", ErrorClassName(p.error_class), p.message));
  return std::move(files).value();
}

// Returns the channel names defined.
std::set<std::string> CheckChannels(const fs::path& root, Diagnostics& out) {
  std::set<std::string> names;
  std::map<std::string, std::string> first_file_of;  // channel name -> file
  for (const YamlFile& file : ReadAll(root, "channels", out)) {
    auto doc = ParseYaml(file.content);
    if (!doc.ok()) {
      out.Error(file.path, doc.status().message());
      continue;
    }
    auto channel = DecodeChannel(*doc);
    if (!channel.ok()) {
      out.Error(file.path, channel.status().message() + " (the update service would skip this channel)");
      continue;
    }
    if (std::string problem = ChannelNameProblem(channel->name); !problem.empty()) out.Error(file.path, problem);
    if (Status st = ValidateChannelTarget(*channel); !st.ok()) out.Error(file.path, st.message());
    if (channel->name != Stem(file.path)) {
      out.Warn(file.path, fmt::format("channel name '{}' differs from the file name", channel->name));
    }
    auto [it, inserted] = first_file_of.emplace(channel->name, file.path);
    if (!inserted) out.Error(file.path, fmt::format("channel '{}' is also defined in {}", channel->name, it->second));
    names.insert(channel->name);
    std::set<std::string> seen;
    for (const Version& v : channel->versions) {
      if (!seen.insert(v.ToString()).second) out.Warn(file.path, fmt::format("version {} is listed twice", v.ToString()));
    }
  }
  return names;
}

// Schema 2.x: every managing file decodes; each channel is managed by one file.
std::set<std::string> CheckManagingFiles(const fs::path& root, Diagnostics& out) {
  std::set<std::string> names;
  std::map<std::string, std::string> owner;
  for (const YamlFile& file : ReadAll(root, "channels", out)) {
    auto doc = ParseYaml(file.content);
    if (!doc.ok()) {
      out.Error(file.path, doc.status().message());
      continue;
    }
    auto managing = DecodeManagingFile(*doc);
    if (!managing.ok()) {
      out.Error(file.path, managing.status().message());
      continue;
    }
    for (const ManagedChannel& c : managing->channels) {
      if (std::string problem = ChannelNameProblem(c.name); !problem.empty()) out.Error(file.path, problem);
      auto [it, inserted] = owner.emplace(c.name, file.path);
      if (!inserted) out.Error(file.path, fmt::format("channel '{}' is also managed by {}", c.name, it->second));
      names.insert(c.name);
    }
  }
  return names;
}

// hotfixes/ (optional): every file decodes, names are unique, channels exist.
void CheckHotfixes(const fs::path& root, const std::set<std::string>& channels, Diagnostics& out) {
  if (!env::DefaultFileSystem().IsDirectory(root / "hotfixes")) return;
  std::map<std::string, std::string> owner;
  for (const YamlFile& file : ReadAll(root, "hotfixes", out)) {
    auto doc = ParseYaml(file.content);
    auto hotfix = doc.ok() ? DecodeHotfix(*doc, Stem(file.path)) : Result<Hotfix>(doc.status());
    if (!hotfix.ok()) {
      out.Error(file.path, hotfix.status().message());
      continue;
    }
    auto [it, inserted] = owner.emplace(hotfix->rule.name, file.path);
    if (!inserted) out.Error(file.path, fmt::format("hotfix '{}' is also defined by {}", hotfix->rule.name, it->second));
    for (const std::string& c : hotfix->rule.channels) {
      if (!channels.count(c)) out.Error(file.path, fmt::format("channel '{}' is not defined under channels/", c));
    }
  }
}

void CheckRule(const YAML::Node& rule, size_t i, const std::string& file, std::set<std::string>& types,
               Diagnostics& out) {
  std::string where = fmt::format("matchingRules[{}]", i);
  std::string type = YamlString(rule["type"]).value_or("");
  if (!types.insert(type).second) out.Error(file, fmt::format("{}: type '{}' appears more than once", where, type));
  for (const auto& kv : rule) {
    std::string key = kv.first.as<std::string>("");
    if (key != "type" && (type == "Always" || key != "promql")) {
      out.Error(file, fmt::format("{}: unexpected key '{}' in a {} rule", where, key, type));
    }
  }
  if (type == "PromQL") {
    const YAML::Node promql = rule["promql"];
    if (!promql.IsMap()) return;
    for (const auto& kv : promql) {
      std::string key = kv.first.as<std::string>("");
      if (key != "promql") out.Error(file, fmt::format("{}.promql: unexpected key '{}'", where, key));
    }
    if (YamlString(promql["promql"]).value_or("").find_first_not_of(" \t\r\n") == std::string::npos) {
      out.Error(file, where + ".promql.promql: the query is empty");
    }
  }
}

// What all files declaring one risk name must agree on. Messages often name the
// target version, so differing messages are only a warning (newer graph-data CI makes
// them identical).
struct RiskDefinition {
  std::string file;
  Risk risk;
  std::set<std::string> messages;
};

void CheckBlockedEdges(const fs::path& root, Diagnostics& out) {
  static const RE2 kRiskName("^[A-Z][A-Za-z0-9_]*$");
  std::map<std::string, RiskDefinition> risks;
  for (const YamlFile& file : ReadAll(root, "blocked-edges", out)) {
    auto doc = ParseYaml(file.content);
    if (!doc.ok()) {
      out.Error(file.path, doc.status().message());
      continue;
    }
    const YAML::Node& d = *doc;
    bool is_risk = d.IsMap() && d["matchingRules"].IsDefined();
    if (!is_risk) {
      auto block = DecodeUnconditionalBlock(d);
      if (!block.ok()) out.Error(file.path, block.status().message());
      continue;
    }
    auto block = DecodeConditionalBlock(d);
    if (!block.ok()) {
      out.Error(file.path, block.status().message());
      continue;
    }
    const Risk& risk = block->risk;
    if (risk.url.rfind("https://", 0) != 0) out.Error(file.path, fmt::format("url '{}' must start with https://", risk.url));
    if (!RE2::FullMatch(risk.name, kRiskName)) {
      out.Error(file.path, fmt::format("name '{}' must match ^[A-Z][A-Za-z0-9_]*$", risk.name));
    }
    std::string to_text = YamlString(d["to"]).value_or("");
    if (fs::path(file.path).filename().string().rfind(to_text, 0) != 0) {
      out.Error(file.path, fmt::format("file name must start with the 'to' version '{}'", to_text));
    }
    if (risk.matching_rules.empty()) out.Error(file.path, "matchingRules must not be empty");
    std::set<std::string> types;
    const YAML::Node rules = d["matchingRules"];
    for (size_t i = 0; i < rules.size(); ++i) CheckRule(rules[i], i, file.path, types, out);
    if (const YAML::Node fixed = d["fixedIn"]; fixed.IsDefined()) {
      auto v = Version::Parse(YamlString(fixed).value_or(""));
      if (!v.ok()) out.Error(file.path, "fixedIn: " + v.status().message());
    }
    auto [it, inserted] = risks.emplace(risk.name, RiskDefinition{file.path, risk, {}});
    it->second.messages.insert(risk.message);
    const Risk& first = it->second.risk;
    if (first.url != risk.url || first.matching_rules != risk.matching_rules) {
      out.Error(file.path, fmt::format("risk '{}' differs from its definition in {} (url and matchingRules "
                                       "must be identical)", risk.name, it->second.file));
    }
  }
  for (const auto& [name, definition] : risks) {
    if (definition.messages.size() > 1) {
      out.Warn(definition.file, fmt::format("risk '{}' has {} different messages across its files", name,
                                            definition.messages.size()));
    }
  }
}

}  // namespace

Diagnostics CheckGraphData(const fs::path& root) {
  Diagnostics out;
  if (!env::DefaultFileSystem().IsDirectory(root)) {
    out.Error(root.string(), "not a directory");
    return out;
  }
  CheckVersionAndRawMetadata(root, out);
  Diagnostics ignored;
  auto version = ReadSchemaVersion(root, ignored);
  std::set<std::string> channels =
      version.ok() && version->major() == 2 ? CheckManagingFiles(root, out) : CheckChannels(root, out);
  CheckBlockedEdges(root, out);
  CheckHotfixes(root, channels, out);
  return out;
}

}  // namespace cincinnati::graphdata
