// ServedEdges: the update edges a graph offers, by channel and arch, so that an update
// report is counted only for an edge that exists where it says it was taken. Reports are
// untrusted: without this check, ids that polled for half an hour could report failures
// on an edge into a release that does not exist (yet), a downgrade, or an edge of
// another channel, and brake it.
//
// An edge F -> T of a report (plain versions, channel C, arch A) is served when the graph
// has an edge, recommended or conditional, from a release whose version without build
// metadata is F to one that is T, both for A and both in C:
//  - a graph builder's graph (or a policy engine's copy of it): "in C" is the release's
//    channels key listing C, and, for a phased release, its start in C not in the future
//    (graph-data's phased rollouts: a release is in a channel from its start on); "for A"
//    is the arch key listing A. Every cluster's phased slot counts: an edge some cluster
//    of the channel may take is served.
//  - a policy engine's answer (a served view, already for one channel and arch and
//    without internal keys): every release is in C and for A.
// Hotfix releases (graph-data hotfixes/, with hotfix rules) are never served edges here:
// they are for one customer's clusters, too few for the brake rule, and whether one
// exists is not for outsiders to learn from a report's answer.
// Built once per graph (an index of releases by version without build, and each
// release's conditional successors; O(nodes + edges)); Has is O(edges out of F's
// releases). Immutable after construction: thread-safe. Never throws.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/graph.h"

namespace cincinnati::reports {

class ServedEdges {
 public:
  // `key_prefix`: the graph's metadata key prefix (its channels and phased-start keys).
  explicit ServedEdges(std::shared_ptr<const Graph> graph, std::string_view key_prefix = "io.openshift.upgrades.graph");

  bool Has(std::string_view channel, std::string_view arch, std::string_view from, std::string_view to, int64_t now) const;
  // Whether from -> to is an edge of any channel and arch (builds dropped).
  bool HasAnywhere(std::string_view from, std::string_view to) const;
  // Whether a release whose version without build is `version` may be reported on (it
  // is in the graph and no hotfix).
  bool HasRelease(std::string_view version) const { return by_base_.count(version) > 0; }
  const Graph& graph() const { return *graph_; }

 private:
  bool InChannel(NodeIndex node, std::string_view channel, int64_t now) const;
  bool ForArch(NodeIndex node, std::string_view arch) const;
  template <typename Fn>
  bool AnyEdge(std::string_view from, std::string_view to, Fn&& keep) const;

  std::shared_ptr<const Graph> graph_;
  std::string channels_key_, phased_start_key_;
  std::unordered_map<std::string_view, std::vector<NodeIndex>> by_base_;  // views into graph_'s versions
  std::unordered_map<NodeIndex, std::vector<NodeIndex>> conditional_;      // from -> its conditional targets
};

}  // namespace cincinnati::reports
