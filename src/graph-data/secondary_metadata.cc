#include "graph-data/secondary_metadata.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "core/internal_metadata.h"
#include "core/strings.h"
#include "graph-data/channel_sort.h"

namespace cincinnati::graphdata {
namespace {

void AppendValue(Metadata& metadata, const std::string& key, std::string_view value, char separator) {
  auto it = metadata.find(key);
  if (it == metadata.end()) {
    metadata.emplace(key, std::string(value));
  } else {
    it->second += separator;
    it->second += value;
  }
}

// Node versions parsed once, indexed by their display form without build metadata
// (equal strings <=> semver-equal versions).
struct VersionIndex {
  std::vector<std::optional<Version>> parsed;
  std::unordered_map<std::string, std::vector<NodeIndex>> by_base;
  std::map<std::string, std::vector<Identifier>> builds;  // every distinct build present

  explicit VersionIndex(const Graph& graph) : parsed(graph.node_count()) {
    for (NodeIndex i = 0; i < graph.node_count(); ++i) {
      auto v = Version::Parse(graph.node(i).version);
      if (!v.ok()) continue;
      by_base[v->ToStringWithoutBuild()].push_back(i);
      builds.emplace(v->BuildString(), v->build());
      parsed[i] = std::move(v).value();
    }
  }
  const std::vector<NodeIndex>& Equal(const Version& v) const {
    static const std::vector<NodeIndex> kNone;
    auto it = by_base.find(v.ToStringWithoutBuild());
    return it == by_base.end() ? kNone : it->second;
  }
};

std::optional<NodeIndex> FindConcrete(const Graph& graph, const std::string& version) {
  auto i = graph.Find(version);
  if (i && graph.node(*i).concrete) return i;
  return std::nullopt;
}

}  // namespace

namespace {

// Writes graph-data into a graph's metadata, one kind of file at a time, in the order the
// metadata's lists must come out: raw metadata, blocked edges (unconditional, then
// conditional), channels and their targets, hotfixes.
class GraphDataWriter {
 public:
  GraphDataWriter(std::string_view prefix, Graph& graph)
      : graph_(graph),
        index_(graph),
        remove_regex_key_(PrefixedKey(prefix, kPreviousRemoveRegexSuffix)),
        blocked_by_key_(PrefixedKey(prefix, kBlockedBySuffix)),
        channels_key_(PrefixedKey(prefix, kChannelsSuffix)),
        prefix_(prefix) {}

  void RawMetadata(const std::vector<RawMetadataEntry>& entries);
  void UnconditionalBlocks(const GraphData& data);
  void ConditionalBlocks(const GraphData& data);
  void ManagingFiles(const GraphData& data);
  void ChannelFiles(const GraphData& data);
  void ChannelTargets(const GraphData& data);
  void Hotfixes(const GraphData& data);
  void SortChannels();

 private:
  // The concrete nodes of `version`, and of its build when it names one.
  template <typename F>
  void ForEachRelease(const Version& version, F&& f) {
    for (NodeIndex i : index_.Equal(version)) {
      if (!graph_.node(i).concrete) continue;
      if (!version.build().empty() && version.build() != index_.parsed[i]->build()) continue;
      f(i);
    }
  }
  void HotfixRelease(const Hotfix& hotfix, const Version& release, Metadata& metadata);

  Graph& graph_;
  const VersionIndex index_;
  const std::string remove_regex_key_;
  // Which file put each rule into remove_regex, written the same way (an unconditional
  // block replaces, a conditional one appends), for explanations.
  const std::string blocked_by_key_;
  const std::string channels_key_;
  const std::string_view prefix_;
};

void GraphDataWriter::RawMetadata(const std::vector<RawMetadataEntry>& entries) {
  for (const RawMetadataEntry& entry : entries) {
    for (NodeIndex i : index_.Equal(entry.version)) {
      if (!graph_.node(i).concrete) continue;
      for (const auto& [key, value] : entry.values) {
        if (IsReservedKey(key, prefix_)) continue;  // under a custom prefix; the default one is skipped when read
        AppendValue(graph_.mutable_metadata(i), key, value, ',');
      }
    }
  }
}

void GraphDataWriter::UnconditionalBlocks(const GraphData& data) {
  static const std::vector<Identifier> kS390x{Identifier::Text("s390x")};
  for (const auto& [path, block] : data.unconditional_blocks) {
    std::vector<std::string> targets;
    if (!block.to.build().empty()) {
      targets.push_back(block.to.ToString());
    } else if (block.to.pre() == kS390x) {
      targets.push_back(block.to.WithBuild(kS390x).ToString());
    } else {
      for (const auto& [_, build] : index_.builds) targets.push_back(block.to.WithBuild(build).ToString());
    }
    for (const std::string& target : targets) {
      if (auto i = FindConcrete(graph_, target)) {
        graph_.mutable_metadata(*i).insert_or_assign(remove_regex_key_, block.from);
        graph_.mutable_metadata(*i).insert_or_assign(blocked_by_key_, EncodeBlockRecord({false, path, block.from}));
      }
    }
  }
}

// Risks: each becomes a risk template and appends to its targets' remove_regex.
void GraphDataWriter::ConditionalBlocks(const GraphData& data) {
  for (const auto& [path, block] : data.conditional_blocks) {
    graph_.mutable_risk_templates().push_back(RiskTemplate{block.from, block.to.ToString(), {block.risk}});
    for (const auto& [_, build] : index_.builds) {
      if (auto i = FindConcrete(graph_, block.to.WithBuild(build).ToString())) {
        AppendValue(graph_.mutable_metadata(*i), remove_regex_key_, block.from, '|');
        AppendValue(graph_.mutable_metadata(*i), blocked_by_key_, EncodeBlockRecord({true, path, block.from}), ';');
      }
    }
  }
}

// 2.x managing files: channels with start times and phased-rollout rules.
void GraphDataWriter::ManagingFiles(const GraphData& data) {
  const std::string start_key = PrefixedKey(prefix_, kPhasedStartSuffix);
  const std::string rollouts_key = PrefixedKey(prefix_, kPhasedRolloutsSuffix);
  for (const auto& managed : data.managing_files) {
    const auto& file = managed.document;  // a named reference: lambdas below capture it (clang 14
                                        // cannot capture a structured binding)
    std::string rules;  // "channel:criterion=seconds,...;..." for the channels with rules
    for (const ManagedChannel& c : file.channels) {
      if (c.rules.empty()) continue;
      rules += (rules.empty() ? "" : ";") + c.name + ":";
      for (size_t i = 0; i < c.rules.size(); ++i) {
        rules += fmt::format("{}{}={}", i ? "," : "", c.rules[i].from_version.value_or("*"), c.rules[i].duration_seconds);
      }
    }
    for (const VersionStart& entry : file.versions) {
      ForEachRelease(entry.version, [&](NodeIndex i) {
        for (const ManagedChannel& c : file.channels) {
          AppendValue(graph_.mutable_metadata(i), channels_key_, c.name, ',');
          AppendValue(graph_.mutable_metadata(i), start_key, fmt::format("{}={}", c.name, entry.start), ',');
        }
        if (!rules.empty()) AppendValue(graph_.mutable_metadata(i), rollouts_key, rules, ';');
      });
    }
  }
}

// 1.x channel files: a release listed twice in one file joins its channel once.
void GraphDataWriter::ChannelFiles(const GraphData& data) {
  std::vector<char> member(graph_.node_count());
  for (const auto& [path, channel] : data.channels) {
    std::fill(member.begin(), member.end(), 0);
    for (const Version& listed : channel.versions) {
      ForEachRelease(listed, [&](NodeIndex i) { member[i] = 1; });
    }
    for (NodeIndex i = 0; i < graph_.node_count(); ++i) {
      if (member[i]) AppendValue(graph_.mutable_metadata(i), channels_key_, channel.name, ',');
    }
  }
}

void GraphDataWriter::ChannelTargets(const GraphData& data) {
  const std::string targets_key = PrefixedKey(prefix_, kChannelTargetsSuffix);
  auto mark_target = [&](const Version& target, const std::string& channel) {
    ForEachRelease(target, [&](NodeIndex i) { AppendValue(graph_.mutable_metadata(i), targets_key, channel, ','); });
  };
  for (const auto& [path, channel] : data.channels) {
    if (channel.target) mark_target(*channel.target, channel.name);
  }
  for (const auto& [path, file] : data.managing_files) {
    for (const ManagedChannel& c : file.channels) {
      if (c.target) mark_target(*c.target, c.name);
    }
  }
}

// A hotfix's releases join its channels and carry its rule (the policy engine hides them
// from everyone else); its extra edges become edge additions.
void GraphDataWriter::Hotfixes(const GraphData& data) {
  for (const auto& entry : data.hotfixes) {
    const auto& hotfix = entry.document;  // captured below: not a structured binding (clang 14)
    for (const Version& release : hotfix.releases) {
      ForEachRelease(release, [&](NodeIndex i) { HotfixRelease(hotfix, release, graph_.mutable_metadata(i)); });
    }
  }
}

void GraphDataWriter::HotfixRelease(const Hotfix& hotfix, const Version& release, Metadata& metadata) {
  const std::string rules_key = PrefixedKey(prefix_, kHotfixRulesSuffix);
  const std::string previous_add_key = PrefixedKey(prefix_, kPreviousAddSuffix);
  const std::string next_add_key = PrefixedKey(prefix_, kNextAddSuffix);
  for (const std::string& channel : hotfix.rule.channels) {
    auto listed = metadata.find(channels_key_);
    if (listed == metadata.end() || !ListContains(listed->second, channel)) {
      AppendValue(metadata, channels_key_, channel, ',');
    }
  }
  AppendValue(metadata, rules_key, EncodeHotfixRule(hotfix.rule), ';');
  for (const HotfixEdge& e : hotfix.edges) {
    if (e.to == release) AppendValue(metadata, previous_add_key, e.from.ToStringWithoutBuild(), ',');
    // An edge between two of the hotfix's releases is already a previous.add of its target.
    bool into_own_release = std::find(hotfix.releases.begin(), hotfix.releases.end(), e.to) != hotfix.releases.end();
    if (e.from == release && !into_own_release) {
      AppendValue(metadata, next_add_key, e.to.ToStringWithoutBuild(), ',');
    }
  }
}

void GraphDataWriter::SortChannels() {
  for (NodeIndex i = 0; i < graph_.node_count(); ++i) {
    auto& metadata = graph_.mutable_metadata(i);
    if (auto it = metadata.find(channels_key_); it != metadata.end()) it->second = SortChannelList(it->second);
  }
}

}  // namespace

void ApplyGraphData(const GraphData& data, std::string_view prefix, Graph& graph) {
  GraphDataWriter writer(prefix, graph);
  writer.RawMetadata(data.raw_metadata);
  writer.UnconditionalBlocks(data);
  writer.ConditionalBlocks(data);
  writer.ManagingFiles(data);
  writer.ChannelFiles(data);
  writer.ChannelTargets(data);
  writer.Hotfixes(data);
  writer.SortChannels();
}

Result<Graph> SecondaryMetadataParse::Apply(Graph graph, TransformContext& context) const {
  std::filesystem::path dir = settings_.data_directory;
  if (auto it = context.parameters.find(kSecondaryMetadataDirectoryParam); it != context.parameters.end()) {
    dir = it->second;
  }
  if (dir.empty()) return Status::InvalidArgument("no graph-data directory configured (data_directory)");
  LoadOptions options{settings_.disallowed_errors};
  auto data = LoadGraphData(dir, options, context.diagnostics);
  if (!data.ok()) return data.status().WithContext(fmt::format("graph-data {}", dir.string()));
  ApplyGraphData(*data, settings_.key_prefix, graph);
  return graph;
}

PluginStep SecondaryMetadataParseFromSettings(const PluginSettings& r) {
  CINCINNATI_RETURN_IF_ERROR(r.CheckKnown({"data_directory", "key_prefix", "default_arch", "disallowed_errors"}));
  SecondaryMetadataSettings s;
  s.data_directory = r.Get("data_directory", "");
  s.key_prefix = r.Get("key_prefix", s.key_prefix);
  s.default_arch = r.Get("default_arch", s.default_arch);
  for (const std::string& name : r.List("disallowed_errors", {})) {
    CINCINNATI_ASSIGN_OR_RETURN(ErrorClass c, ParseErrorClass(name));
    s.disallowed_errors.insert(c);
  }
  return std::unique_ptr<GraphTransform>(std::make_unique<SecondaryMetadataParse>(s));
}

}  // namespace cincinnati::graphdata
