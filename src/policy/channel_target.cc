#include "policy/channel_target.h"

#include <optional>
#include <vector>

#include <fmt/format.h>

#include "core/semver.h"
#include "core/strings.h"

namespace cincinnati::policy {

std::optional<std::vector<std::string>> ChannelTarget::cache_key_parameters() const {
  if (channels_.empty()) return std::vector<std::string>{};
  return std::vector<std::string>{"channel", "version"};
}

Result<Graph> ChannelTarget::ApplyTo(const Graph& graph, TransformContext& context) const {
  auto strip = [&](Graph g) {
    for (NodeIndex i = 0; i < g.node_count(); ++i) g.mutable_metadata(i).erase(targets_key_);
    return g;
  };
  auto channel = context.parameters.find("channel");
  auto version = context.parameters.find("version");
  if (channel == context.parameters.end() || version == context.parameters.end() || !Enabled(channel->second)) {
    return strip(graph);
  }
  auto wanted = Version::Parse(version->second);
  if (!wanted.ok()) return strip(graph);

  std::optional<NodeIndex> from, explicit_target, newest;
  std::optional<Version> newest_version;
  for (NodeIndex i = 0; i < graph.node_count(); ++i) {
    auto v = Version::Parse(graph.node(i).version);
    if (!v.ok()) continue;
    if (*v == *wanted) from = i;
    auto marked = graph.node(i).metadata.find(targets_key_);
    if (marked != graph.node(i).metadata.end() && ListContains(marked->second, channel->second)) explicit_target = i;
    if (!newest_version || newest_version->Compare(*v) < 0) newest_version = *v, newest = i;
  }
  std::optional<NodeIndex> target = explicit_target ? explicit_target : newest;
  if (!from || !target) return strip(graph);

  // Forward from the cluster's version, backward from the target, over edges and
  // conditional edges alike: a conditional edge may be taken too.
  std::vector<std::vector<NodeIndex>> out(graph.node_count()), in(graph.node_count());
  for (const Edge& e : graph.Edges()) out[e.from].push_back(e.to), in[e.to].push_back(e.from);
  for (const ConditionalEdge& group : graph.conditional_edges()) {
    for (const ConditionalEdgeRef& ref : group.edges) {
      auto f = graph.Find(ref.from), t = graph.Find(ref.to);
      if (f && t) out[*f].push_back(*t), in[*t].push_back(*f);
    }
  }
  auto reach = [&](NodeIndex start, const std::vector<std::vector<NodeIndex>>& next) {
    std::vector<char> seen(graph.node_count());
    std::vector<NodeIndex> stack{start};
    seen[start] = 1;
    while (!stack.empty()) {
      NodeIndex x = stack.back();
      stack.pop_back();
      for (NodeIndex y : next[x]) {
        if (!seen[y]) seen[y] = 1, stack.push_back(y);
      }
    }
    return seen;
  };
  std::vector<char> forward = reach(*from, out), backward = reach(*target, in);
  bool reachable = backward[*from];
  // Every kept node lies on a path from the cluster's version to the target, so every
  // edge among them does too.
  return strip(graph.Retain([&](NodeIndex i) { return reachable ? forward[i] && backward[i] : i == *from; }));
}

StepReason ChannelTarget::ExplainLoss(const StepLoss& loss) const {
  // " 4.13.3": the one release of the target view without successors.
  std::string target;
  for (NodeIndex i = 0; i < loss.after.node_count(); ++i) {
    if (loss.after.successors(i).empty() && !loss.after.predecessors(i).empty()) {
      target = " " + loss.after.node(i).version;
    }
  }
  if (loss.to) {
    return {"channel_target", fmt::format("{} -> {} leads away from the channel's target{}", loss.from_version,
                                          loss.to_version, target)};
  }
  auto version = loss.context.parameters.find("version");
  return {"channel_target", fmt::format("{} is off every path from {} to the channel's target{}", loss.from_version,
                                        version == loss.context.parameters.end() ? "" : version->second, target)};
}

PluginStep ChannelTargetFromSettings(const PluginSettings& r) {
  CINCINNATI_RETURN_IF_ERROR(r.CheckKnown({"channels"}));
  std::vector<std::string> channels = r.List("channels", {});
  return std::unique_ptr<GraphTransform>(std::make_unique<ChannelTarget>(std::set<std::string>(channels.begin(), channels.end())));
}

}  // namespace cincinnati::policy
