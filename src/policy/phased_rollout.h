// "phased-rollout" (graph-data schema 2.x): each cluster's view at the current time.
//
// Per the phased-rollouts design: a release is in a channel from its start time on,
// never before. An edge between two started releases appears at T = the later of
// their starts when the channel has no matching rule, and otherwise to a given cluster
// at T + u * duration. The duration comes from the target's channel rules: "minor"
// when source and target differ in major or minor, else "patch", falling back to the
// default rule (no fromVersion), else 0. u in [0, 1) is a hash of the cluster id and
// the target version, so early slots rotate from release to release and replicas
// agree without shared state; a request without a valid id (a UUID) gets u = 1.
// The internal keys the graph builder wrote are removed from the answer. Keys that do
// not decode (core/internal_metadata.h) make every function here return an error naming
// the node and the key; the graph builder and the policy engine never publish such a graph.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>
#include <memory>
#include <string>
#include <string_view>

#include "core/metadata_keys.h"
#include "core/transform.h"
#include "env/clock.h"

namespace cincinnati::policy {

double RolloutPosition(std::string_view cluster_id, std::string_view target_version);
bool IsValidClusterId(std::string_view id);
// Each target's position for cluster `id`; 1 (the end of every window) when `id` is not
// a UUID.
std::vector<double> RolloutPositions(std::string_view id, const std::vector<std::string>& targets);

// Whether a cluster at position u sees, at `now`, an edge whose window opens at `begin`
// and lasts `window` (> 0) seconds. PhasedRollout and the answer pieces
// (service/answer_pieces.h) both decide with this one comparison, so they agree on every
// cluster to the last bit of the floating-point arithmetic.
inline bool SeesPhasedEdge(int64_t now, int64_t begin, int64_t window, double u) {
  return static_cast<double>(now) >= static_cast<double>(begin) + u * static_cast<double>(window);
}

// Every cluster's answer at the instants [from, until) of one channel view, described at
// once: the widest view (PhasedRollout's output with every edge that some cluster sees)
// and, for each of its edges and conditional-edge references, whether every cluster
// sees it or only those whose position for `targets[target]` is early enough
// (SeesPhasedEdge). Nodes, always-visible edges and hidden ones stay the same for every
// cluster throughout the span; a cluster's answer is the widest view without the
// per-cluster edges it does not see, in the same order.
struct PhasedSpan {
  struct Rule {
    bool per_cluster = false;
    int64_t begin = 0, window = 0;
    uint32_t target = 0;
  };
  Graph widest;
  std::vector<Rule> edges;              // one per widest.Edges() entry
  std::vector<std::vector<Rule>> refs;  // per widest conditional edge, one per reference
  std::vector<std::string> targets;     // target versions without build, hashed with the id
  int64_t from = INT64_MIN, until = INT64_MAX;
  bool Contains(int64_t now) const { return from <= now && now < until; }
};

// An edge's rollout in one channel: it appears for a cluster at u in [0,1) at
// `begin + u * duration`.
struct RolloutWindow {
  std::string channel, from, to;  // versions without build metadata
  int64_t begin = 0;
  int64_t duration = 0;
  double Fraction(int64_t now) const {
    return duration <= 0 ? 1.0 : std::clamp(static_cast<double>(now - begin) / static_cast<double>(duration), 0.0, 1.0);
  }
};

// Every phased edge of a graph builder's graph (or of a view), per channel with rules,
// deduplicated across architectures.
Result<std::vector<RolloutWindow>> RolloutWindows(const Graph& graph, std::string_view key_prefix = kDefaultKeyPrefix);

// When each edge of a channel view (channel- and arch-filtered, internal keys still
// present) appears for cluster `id`: the later of its endpoints' starts, plus its
// position times the window for phased edges. The same rule PhasedRollout applies.
struct EdgeTiming {
  std::string from, to;
  int64_t appears = 0;      // Unix seconds (INT64_MIN: always)
  int64_t window = 0;       // seconds; 0 when not phased
  double position = 0;      // u of this cluster, when phased
};
Result<std::vector<EdgeTiming>> EdgeTimings(const Graph& view, std::string_view channel, std::string_view id,
                                            std::string_view key_prefix = kDefaultKeyPrefix);

class PhasedRollout : public GraphTransform {
 public:
  // Answers for the Unix second `clock` reads (shared: the service's clock, or a command's
  // or test's fixed instant, an env::ManualClock).
  explicit PhasedRollout(std::shared_ptr<const env::Clock> clock, std::string key_prefix = std::string(kDefaultKeyPrefix));
  std::string_view name() const override { return "phased-rollout"; }
  Result<Graph> Apply(Graph graph, TransformContext& context) const override { return ApplyTo(graph, context); }
  Result<Graph> ApplyTo(const Graph& graph, TransformContext& context) const override;
  bool AppliesTo(const Graph& graph) const override;
  // Every cluster's answer around `now` for the channel in `parameters` (an error when
  // there is none, or a key does not decode, as ApplyTo).
  Result<PhasedSpan> SpanAt(const Graph& input, const Parameters& parameters, int64_t now) const;
  // not_started (a release before its start in the channel) or phased (an edge this
  // cluster sees later: when, the share of clusters that see it now, and when all do),
  // at the instant the answers are computed for.
  StepReason ExplainLoss(const StepLoss& loss) const override;
  // The instant its answers are computed for.
  int64_t Now() const { return env::UnixSeconds(*clock_); }
  const std::string& key_prefix() const { return key_prefix_; }

 private:
  std::shared_ptr<const env::Clock> clock_;
  std::string key_prefix_, start_key_, rollouts_key_;
};

}  // namespace cincinnati::policy
