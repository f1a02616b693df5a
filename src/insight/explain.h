// Explain: why a cluster is (not) offered an update, in the words of the step that decided.
//
// The policy chain runs on the graph builder's graph one step at a time, with the
// cluster's parameters (channel, arch, id, version) and entitlements, exactly as for
// its answer. For the edge version -> to, the first step after which the release or
// the edge is gone says why, through GraphTransform::ExplainLoss (channel-filter: not in
// the channel; arch-filter: not built for the arch; hotfix-filter: a hotfix for other
// customers; phased-rollout: not started yet, or phased with this cluster's instant and
// the share of clusters that see it now; channel-target: off the paths to the channel's
// target; a step that does not explain itself: removed by that step, named). An edge the builder graph never had is explained by the
// builder's records (builder_records.h): blocked by which blocked-edges file, removed
// by which metadata key, a release removed by release.remove, or an update that the
// release metadata never declared. Because the verdict is read off the same steps that
// make the answer, the two cannot disagree.
//
// Without `to`, every candidate target is explained: the releases newer than `version`
// in the channel's view for the arch (before per-cluster steps), and the builder
// graph's successors of `version`. Errors: bad parameters as the chain reports them
// (MissingParams, InvalidParams). Pure given the chain's clock; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/transform.h"

namespace cincinnati::insight {

enum class Verdict { kOffered, kConditional, kNotOffered };
std::string_view VerdictName(Verdict verdict);  // "offered", "conditional", "not_offered"

struct Reason {
  // offered, conditional, not_in_graph, removed_release, no_update, blocked, removed_by_metadata,
  // not_in_channel, not_for_arch, hotfix, not_started, phased, channel_target, removed_by_step
  std::string kind;
  std::string message;     // one sentence for people
  std::string step;        // the chain step that decided, if any
  std::string file;        // graph-data file (blocked)
  std::string rule;        // its `from` regex
  std::vector<std::string> risks;  // conditional
  std::optional<int64_t> visible_from;  // phased, not_started: Unix seconds
  std::optional<double> share_now;      // phased: fraction of clusters that see it now
  std::optional<int64_t> complete_at;   // phased: when every cluster sees it
};

struct EdgeExplanation {
  std::string from, to;
  Verdict verdict = Verdict::kNotOffered;
  std::vector<Reason> reasons;
};

struct ExplainRequest {
  Parameters parameters;  // the client's: channel, arch, id, ... (version is set from `version`)
  ClusterEntitlements entitlements;
  std::string version;
  std::optional<std::string> to;
};

struct Explanation {
  std::string channel, arch, version;
  std::vector<EdgeExplanation> edges;  // by target version
  // Set when there is nothing to explain, as PathAnswer says it: "not_in_channel" (the
  // channel has no release for the arch: a mistyped channel, say), with one sentence.
  std::string stop, message;
};

Result<Explanation> Explain(const TransformChain& chain, const Graph& builder_graph, const ExplainRequest& request);

// JSON for machines: {"channel","arch","version","edges":[{"from","to","verdict","offered","reasons":[...]}]},
// with "stop" and "message" after "edges" when there is nothing to explain.
std::string ExplanationJson(const Explanation& explanation);
// A table for people: one line per edge, its reasons indented below; or the one line
// that says why there is nothing to explain ("no releases in channel ...").
std::string ExplanationText(const Explanation& explanation);

}  // namespace cincinnati::insight
