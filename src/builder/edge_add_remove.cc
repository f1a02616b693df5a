#include "builder/edge_add_remove.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>
#include <re2/re2.h>

#include "core/internal_metadata.h"
#include "core/semver.h"
#include "core/strings.h"
#include "graph-data/documents.h"

namespace cincinnati {
namespace {

// Compiles each distinct pattern once per run.
class RegexCache {
 public:
  Result<const RE2*> Get(const std::string& pattern) {
    auto it = cache_.find(pattern);
    if (it == cache_.end()) {
      CINCINNATI_ASSIGN_OR_RETURN(std::shared_ptr<const RE2> re, graphdata::CompileRegex(pattern));
      it = cache_.emplace(pattern, std::move(re)).first;
    }
    return it->second.get();
  }

 private:
  std::unordered_map<std::string, std::shared_ptr<const RE2>> cache_;
};

class Editor {
 public:
  Editor(Graph& graph, const EdgeAddRemoveSettings& settings, Diagnostics& diagnostics)
      : graph_(graph), settings_(settings), diagnostics_(diagnostics) {}

  // The nodes listed under `key` on node x (see the header for arch handling).
  Result<std::vector<NodeIndex>> Listed(NodeIndex x, const std::string& key, std::string_view value) {
    const Node& node = graph_.node(x);
    std::vector<Identifier> arch_build;
    auto arch = node.metadata.find(kArchKey);
    if (arch != node.metadata.end()) {
      auto ids = ParseIdentifiers(arch->second);
      if (!ids.ok()) {
        return Status::InvalidArgument(fmt::format("{}: invalid arch '{}'", node.version, arch->second));
      }
      arch_build = std::move(ids).value();
    }
    std::vector<NodeIndex> out;
    for (std::string_view raw : Split(value, ',')) {
      std::string_view item = TrimWhitespace(raw);
      std::string target(item);
      if (arch != node.metadata.end()) {
        auto v = Version::Parse(item);
        if (!v.ok()) return v.status().WithContext(fmt::format("{}: {}", node.version, key));
        target = v->WithBuild(arch_build).ToString();
      }
      if (auto i = graph_.Find(target)) {
        out.push_back(*i);
      } else {
        diagnostics_.Warn(node.version, fmt::format("{} names {}, which is not in the graph (skipped)", key, target));
      }
    }
    return out;
  }

  // Calls fn(x, value) for every concrete node x carrying `key`, in index order.
  template <typename Fn>
  Status ForEachWithKey(const std::string& key, Fn fn) {
    for (NodeIndex x = 0; x < graph_.node_count(); ++x) {
      const Node& node = graph_.node(x);
      if (!node.concrete) continue;
      auto it = node.metadata.find(key);
      if (it == node.metadata.end()) continue;
      std::string value = it->second;  // fn may edit metadata
      CINCINNATI_RETURN_IF_ERROR(fn(x, value));
    }
    return Status::OK();
  }

  Status AddEdges(std::string_view suffix, bool incoming) {
    const std::string key = PrefixedKey(settings_.key_prefix, suffix);
    return ForEachWithKey(key, [&](NodeIndex x, const std::string& value) -> Status {
      CINCINNATI_ASSIGN_OR_RETURN(std::vector<NodeIndex> listed, Listed(x, key, value));
      for (NodeIndex v : listed) {
        Status st = incoming ? graph_.AddEdge(v, x) : graph_.AddEdge(x, v);
        if (!st.ok()) return st.WithContext(fmt::format("{}: {}", graph_.node(x).version, key));
      }
      return Status::OK();
    });
  }

  // Removes from->to; remembers it (with the key's suffix as the cause) for explanations.
  void Remove(NodeIndex from, NodeIndex to, std::string_view cause) {
    if (graph_.RemoveEdge(from, to)) removed_[to].push_back(RemovedEdge{graph_.node(from).version, std::string(cause)});
  }

  void RemoveAllIncoming(NodeIndex x, std::string_view cause) {
    std::vector<NodeIndex> preds = graph_.predecessors(x);
    for (NodeIndex p : preds) Remove(p, x, cause);
  }

  // Writes <prefix>.removed.previous on every node that lost an incoming edge.
  void RecordRemovals() {
    const std::string key = PrefixedKey(settings_.key_prefix, kRemovedPreviousSuffix);
    for (const auto& entry : removed_) {
      std::string value;
      for (const RemovedEdge& edge : entry.second) {
        if (!value.empty()) value += ',';
        value += EncodeRemovedEdge(edge);
      }
      graph_.mutable_metadata(entry.first).insert_or_assign(key, std::move(value));
    }
  }

  Status RemoveEdges(std::string_view suffix, bool incoming) {
    const std::string key = PrefixedKey(settings_.key_prefix, suffix);
    return ForEachWithKey(key, [&](NodeIndex x, const std::string& value) -> Status {
      if (incoming && TrimWhitespace(value) == settings_.remove_all_edges_value) {
        RemoveAllIncoming(x, suffix);
        return Status::OK();
      }
      CINCINNATI_ASSIGN_OR_RETURN(std::vector<NodeIndex> listed, Listed(x, key, value));
      for (NodeIndex v : listed) incoming ? Remove(v, x, suffix) : Remove(x, v, suffix);
      return Status::OK();
    });
  }

  Status RemoveByRegex() {
    const std::string key = PrefixedKey(settings_.key_prefix, kPreviousRemoveRegexSuffix);
    return ForEachWithKey(key, [&](NodeIndex x, const std::string& pattern) -> Status {
      if (pattern == ".*") {
        RemoveAllIncoming(x, kPreviousRemoveRegexSuffix);
        return Status::OK();
      }
      auto re = regexes_.Get(pattern);
      if (!re.ok()) return re.status().WithContext(fmt::format("{}: {}", graph_.node(x).version, key));
      std::vector<NodeIndex> preds = graph_.predecessors(x);
      for (NodeIndex p : preds) {
        if (RE2::PartialMatch(graph_.node(p).version, **re)) Remove(p, x, kPreviousRemoveRegexSuffix);
      }
      return Status::OK();
    });
  }

  void RemoveConsumedKeys() {
    for (std::string_view suffix : {kPreviousAddSuffix, kNextAddSuffix, kPreviousRemoveSuffix,
                                    kPreviousRemoveRegexSuffix, kNextRemoveSuffix}) {
      const std::string key = PrefixedKey(settings_.key_prefix, suffix);
      for (NodeIndex x = 0; x < graph_.node_count(); ++x) graph_.mutable_metadata(x).erase(key);
    }
  }

 private:
  Graph& graph_;
  const EdgeAddRemoveSettings& settings_;
  Diagnostics& diagnostics_;
  RegexCache regexes_;
  std::map<NodeIndex, std::vector<RemovedEdge>> removed_;
};

// For every edge a risk template reaches, the templates whose risks it gets, in
// template order; edges in first-reached order.
using RiskEdges = std::vector<std::pair<Edge, std::vector<uint32_t>>>;

Result<RiskEdges> CollectRiskEdges(const Graph& graph) {
  // Nodes by their version before the first '+', so a `to` without build matches
  // every arch.
  std::unordered_map<std::string_view, std::vector<NodeIndex>> by_base;
  for (NodeIndex i = 0; i < graph.node_count(); ++i) {
    std::string_view v = graph.node(i).version;
    by_base[v.substr(0, v.find('+'))].push_back(i);
  }
  RegexCache regexes;
  // Whether a regex matches a node's version, per regex: templates share a few regexes
  // ("4[.]9[.].*" into every 4.10.z) and their targets share predecessors. Holds one
  // entry per match done, so no more than the matching work.
  std::unordered_map<const RE2*, std::unordered_map<NodeIndex, bool>> matched;
  const std::vector<RiskTemplate>& templates = graph.risk_templates();
  RiskEdges edge_templates;
  std::unordered_map<uint64_t, size_t> position;
  for (uint32_t k = 0; k < templates.size(); ++k) {
    const RiskTemplate& t = templates[k];
    CINCINNATI_ASSIGN_OR_RETURN(const RE2* re, regexes.Get(t.from_regex));
    std::vector<NodeIndex> targets;
    if (auto it = by_base.find(t.to); it != by_base.end()) targets = it->second;
    if (auto exact = graph.Find(t.to)) targets.push_back(*exact);
    std::sort(targets.begin(), targets.end());
    targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
    for (NodeIndex n : targets) {
      std::vector<NodeIndex> preds = graph.predecessors(n);
      std::sort(preds.begin(), preds.end());
      for (NodeIndex f : preds) {
        if (t.from_regex != ".*") {
          auto [known, fresh] = matched[re].try_emplace(f, false);
          if (fresh) known->second = RE2::PartialMatch(graph.node(f).version, *re);
          if (!known->second) continue;
        }
        auto [it, inserted] = position.emplace((uint64_t{f} << 32) | n, edge_templates.size());
        if (inserted) edge_templates.push_back({Edge{f, n}, {}});
        edge_templates[it->second].second.push_back(k);
      }
    }
  }
  return edge_templates;
}

size_t HashRisks(const std::vector<Risk>& risks) {
  std::hash<std::string_view> h;
  size_t seed = risks.size();
  auto mix = [&seed](size_t v) { seed ^= v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2); };
  for (const Risk& r : risks) {
    mix(h(r.url));
    mix(h(r.name));
    mix(h(r.message));
    for (const MatchingRule& m : r.matching_rules) mix(h(m.promql) + static_cast<size_t>(m.type));
  }
  return seed;
}

// One group per distinct (ordered) risk list, in first-seen order. Edges with the
// same template sequence share a list, so lists are built once per sequence; equal
// lists are found by hash, not by comparing with every group.
std::vector<ConditionalEdge> GroupRiskEdges(const Graph& graph, const RiskEdges& edge_templates) {
  const std::vector<RiskTemplate>& templates = graph.risk_templates();
  std::vector<ConditionalEdge> groups;
  std::unordered_multimap<size_t, size_t> groups_by_hash;
  std::map<std::vector<uint32_t>, size_t> group_of_sequence;
  for (const auto& [edge, sequence] : edge_templates) {
    auto [it, inserted] = group_of_sequence.emplace(sequence, groups.size());
    if (inserted) {
      std::vector<Risk> risks;
      for (uint32_t k : sequence) risks.insert(risks.end(), templates[k].risks.begin(), templates[k].risks.end());
      const size_t hash = HashRisks(risks);
      auto [first, last] = groups_by_hash.equal_range(hash);
      auto same = std::find_if(first, last, [&](const auto& entry) { return groups[entry.second].risks == risks; });
      if (same == last) {
        groups_by_hash.emplace(hash, groups.size());
        groups.push_back(ConditionalEdge{{}, std::move(risks)});
      } else {
        it->second = same->second;
      }
    }
    groups[it->second].edges.push_back(ConditionalEdgeRef{graph.node(edge.from).version, graph.node(edge.to).version});
  }
  return groups;
}

}  // namespace

Status MaterializeRisks(Graph& graph) {
  if (graph.risk_templates().empty()) return Status::OK();
  CINCINNATI_ASSIGN_OR_RETURN(RiskEdges edge_templates, CollectRiskEdges(graph));
  std::vector<ConditionalEdge> groups = GroupRiskEdges(graph, edge_templates);
  auto& existing = graph.mutable_conditional_edges();
  existing.insert(existing.end(), std::make_move_iterator(groups.begin()), std::make_move_iterator(groups.end()));
  graph.mutable_risk_templates().clear();
  graph.set_conditional_edges_present(true);
  return Status::OK();
}

Result<Graph> EdgeAddRemove::Apply(Graph graph, TransformContext& context) const {
  Editor editor(graph, settings_, context.diagnostics);
  CINCINNATI_RETURN_IF_ERROR(editor.AddEdges(kPreviousAddSuffix, /*incoming=*/true));
  CINCINNATI_RETURN_IF_ERROR(editor.AddEdges(kNextAddSuffix, /*incoming=*/false));
  if (settings_.include_conditional_edges) CINCINNATI_RETURN_IF_ERROR(MaterializeRisks(graph));
  CINCINNATI_RETURN_IF_ERROR(editor.RemoveEdges(kPreviousRemoveSuffix, /*incoming=*/true));
  CINCINNATI_RETURN_IF_ERROR(editor.RemoveByRegex());
  CINCINNATI_RETURN_IF_ERROR(editor.RemoveEdges(kNextRemoveSuffix, /*incoming=*/false));
  if (settings_.remove_consumed_metadata) editor.RemoveConsumedKeys();
  if (settings_.record_removals) editor.RecordRemovals();
  return graph;
}

PluginStep EdgeAddRemoveFromSettings(const PluginSettings& r) {
  CINCINNATI_RETURN_IF_ERROR(r.CheckKnown(
      {"key_prefix", "remove_all_edges_value", "remove_consumed_metadata", "include_conditional_edges"}));
  EdgeAddRemoveSettings s;
  s.key_prefix = r.Get("key_prefix", s.key_prefix);
  s.remove_all_edges_value = r.Get("remove_all_edges_value", s.remove_all_edges_value);
  CINCINNATI_ASSIGN_OR_RETURN(s.remove_consumed_metadata, r.Bool("remove_consumed_metadata", false));
  CINCINNATI_ASSIGN_OR_RETURN(s.include_conditional_edges, r.Bool("include_conditional_edges", true));
  return std::unique_ptr<GraphTransform>(std::make_unique<EdgeAddRemove>(s));
}

}  // namespace cincinnati
