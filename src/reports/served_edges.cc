#include "reports/served_edges.h"

#include <algorithm>

#include "core/internal_metadata.h"
#include "core/metadata_keys.h"
#include "core/strings.h"

namespace cincinnati::reports {
namespace {

std::string_view Base(std::string_view version) { return version.substr(0, version.find('+')); }

}  // namespace

ServedEdges::ServedEdges(std::shared_ptr<const Graph> graph, std::string_view key_prefix)
    : graph_(std::move(graph)),
      channels_key_(PrefixedKey(key_prefix, kChannelsSuffix)),
      phased_start_key_(PrefixedKey(key_prefix, kPhasedStartSuffix)) {
  const std::string hotfix_rules = PrefixedKey(key_prefix, kHotfixRulesSuffix);
  for (NodeIndex i = 0; i < graph_->node_count(); ++i) {
    const Node& node = graph_->node(i);
    if (node.concrete && !node.metadata.count(hotfix_rules)) by_base_[Base(node.version)].push_back(i);
  }
  for (const ConditionalEdge& group : graph_->conditional_edges()) {
    for (const ConditionalEdgeRef& ref : group.edges) {
      auto from = graph_->Find(ref.from), to = graph_->Find(ref.to);
      if (from && to) conditional_[*from].push_back(*to);
    }
  }
}

bool ServedEdges::InChannel(NodeIndex node, std::string_view channel, int64_t now) const {
  if (graph_->is_served_view()) return true;
  const Metadata& metadata = graph_->node(node).metadata;
  auto channels = metadata.find(channels_key_);
  if (channels == metadata.end() || !ListContains(channels->second, channel)) return false;
  auto starts = metadata.find(phased_start_key_);
  if (starts == metadata.end()) return true;
  auto decoded = DecodePhasedStarts(starts->second);
  if (!decoded.ok()) return false;  // never in a served graph (CheckServable decodes it)
  for (const ChannelStart& s : *decoded) {
    if (s.channel == channel) return s.start <= now;
  }
  return true;
}

bool ServedEdges::ForArch(NodeIndex node, std::string_view arch) const {
  const Metadata& metadata = graph_->node(node).metadata;
  auto arches = metadata.find(std::string(kArchKey));
  if (arches == metadata.end()) return graph_->is_served_view();
  return ListContains(arches->second, arch);
}

template <typename Fn>
bool ServedEdges::AnyEdge(std::string_view from, std::string_view to, Fn&& keep) const {
  auto sources = by_base_.find(from), targets = by_base_.find(to);  // releases that may be reported on
  if (sources == by_base_.end() || targets == by_base_.end()) return false;
  auto reaches = [&](NodeIndex f, NodeIndex t) {
    return std::find(targets->second.begin(), targets->second.end(), t) != targets->second.end() && keep(f) && keep(t);
  };
  for (NodeIndex f : sources->second) {
    for (NodeIndex t : graph_->successors(f)) {
      if (reaches(f, t)) return true;
    }
    if (auto c = conditional_.find(f); c != conditional_.end()) {
      for (NodeIndex t : c->second) {
        if (reaches(f, t)) return true;
      }
    }
  }
  return false;
}

bool ServedEdges::Has(std::string_view channel, std::string_view arch, std::string_view from, std::string_view to, int64_t now) const {
  return AnyEdge(from, to, [&](NodeIndex n) { return InChannel(n, channel, now) && ForArch(n, arch); });
}

bool ServedEdges::HasAnywhere(std::string_view from, std::string_view to) const {
  return AnyEdge(from, to, [](NodeIndex) { return true; });
}

}  // namespace cincinnati::reports
