#include "policy/hotfix_filter.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/strings.h"

namespace cincinnati::policy {

std::optional<std::vector<std::string>> HotfixFilter::cache_key_parameters() const {
  return std::vector<std::string>{"channel"};
}

Result<Graph> HotfixFilter::ApplyTo(const Graph& graph, TransformContext& context) const {
  return Apply(graph, context);
}

Result<Graph> HotfixFilter::Apply(Graph graph, TransformContext& context) const {
  bool any = false;
  for (const Node& n : graph.nodes()) any = any || n.metadata.count(rules_key_);
  if (!any) return graph;
  auto channel = context.parameters.find("channel");
  const std::vector<std::string>& entitled = context.entitlements.hotfixes;
  std::vector<char> keep(graph.node_count(), 1);
  for (NodeIndex i = 0; i < graph.node_count(); ++i) {
    auto it = graph.node(i).metadata.find(rules_key_);
    if (it == graph.node(i).metadata.end()) continue;
    bool visible = false;
    if (channel != context.parameters.end() && !entitled.empty()) {
      auto rules = DecodeHotfixRules(it->second);
      if (!rules.ok()) return rules.status().WithContext(fmt::format("{}: {}", graph.node(i).version, rules_key_));
      for (const HotfixRule& rule : *rules) {
        visible = visible || (rule.InChannel(channel->second) &&
                              std::find(entitled.begin(), entitled.end(), rule.name) != entitled.end());
      }
    }
    keep[i] = visible;
  }
  Graph out = std::all_of(keep.begin(), keep.end(), [](char k) { return k; })
                  ? std::move(graph)
                  : graph.Retain([&](NodeIndex i) { return keep[i] != 0; });
  for (NodeIndex i = 0; i < out.node_count(); ++i) out.mutable_metadata(i).erase(rules_key_);
  return out;
}

HotfixIndex::HotfixIndex(const Graph& graph, std::string_view key_prefix) {
  const std::string key = PrefixedKey(key_prefix, kHotfixRulesSuffix);
  std::set<std::string> seen;
  for (const Node& n : graph.nodes()) {
    auto it = n.metadata.find(key);
    if (it == n.metadata.end()) continue;
    // A graph whose rules do not decode is never served (CheckServable), so nothing is
    // lost by skipping them here.
    auto rules = DecodeHotfixRules(it->second);
    if (!rules.ok()) continue;
    for (HotfixRule& rule : *rules) {
      if (seen.insert(rule.name).second) rules_.push_back(std::move(rule));
    }
  }
  std::sort(rules_.begin(), rules_.end(), [](const HotfixRule& a, const HotfixRule& b) { return a.name < b.name; });
}

std::vector<std::string> HotfixIndex::Entitled(const ClusterInfo& cluster, std::string_view channel) const {
  std::vector<std::string> names;  // sorted, as rules_ is
  for (const HotfixRule& rule : rules_) {
    if (rule.InChannel(channel) && rule.AppliesTo(cluster)) names.push_back(rule.name);
  }
  return names;
}

PluginStep HotfixFilterFromSettings(const PluginSettings& r) {
  CINCINNATI_RETURN_IF_ERROR(r.CheckKnown({}));
  return std::unique_ptr<GraphTransform>(std::make_unique<HotfixFilter>());
}

}  // namespace cincinnati::policy
