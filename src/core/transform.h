// GraphTransform: one step of a plugin chain, graph in and graph out.
//
// Graph-builder steps (release scraping, graph-data, edge add/remove) and policy-engine
// steps (channel and arch filters) share this interface and are composed by
// configuration into a chain. A transform that fails returns a Status; the chain stops
// and the caller keeps whatever graph it had before (a failed step never leaks a
// half-applied graph because it only ever returned a new one). An exception thrown by
// a step becomes an Internal error of that step (core/guard.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/diagnostics.h"
#include "core/graph.h"
#include "core/status.h"

namespace cincinnati {

// Parameters of one run: client query parameters in the policy engine, run parameters
// handed from step to step in the graph builder.
using Parameters = std::map<std::string, std::string, std::less<>>;

// What the policy engine knows of the requesting cluster besides its query: set by the
// service from the cluster directory, never from client parameters.
struct ClusterEntitlements {
  std::vector<std::string> hotfixes;  // names of the hotfixes the cluster may see, sorted
  bool operator==(const ClusterEntitlements&) const = default;
};

struct TransformContext {
  Parameters parameters;
  ClusterEntitlements entitlements;
  Diagnostics diagnostics;
  size_t raw_releases = 0;  // set by release sources: releases found before graph building
  // Set by release sources: releases left out because their own metadata is unusable
  // (builder/release_check.h).
  size_t rejected_releases = 0;
  // Live progress of long steps ("tags_listed", "manifests_read", ...), when someone
  // listens (the graph builder turns it into metrics). May be called from any thread.
  std::function<void(std::string_view item, double value)> progress;
  // Requested when the run must end early (the graph builder's refresh timed out, or
  // the service stops): long steps and their HTTP requests give up with an error soon
  // after. Without a stop state the run is not cancellable.
  std::stop_token stop;
};

// A release or an edge that a cluster's view lost at one step, as explanations
// (insight/explain.h) ask that step about it: the graphs just before and after the
// step, the release lost (`from` alone) or the edge lost (`from` and `to`) as indices
// into `before`, their versions as the cluster names them (without "+arch"), and the
// context the step ran with (the cluster's parameters, "version" among them, and its
// entitlements).
struct StepLoss {
  const Graph& before;
  const Graph& after;
  NodeIndex from;
  std::optional<NodeIndex> to;
  std::string from_version, to_version;
  const TransformContext& context;
};

// Why a step took it out: a stable kind for machines (not_in_channel, phased, ...) and
// one sentence for people; steps that delay rather than refuse also say when.
struct StepReason {
  StepReason() = default;
  StepReason(std::string kind, std::string message) : kind(std::move(kind)), message(std::move(message)) {}
  std::string kind;
  std::string message;
  std::optional<int64_t> visible_from;  // Unix seconds: when this cluster sees it
  std::optional<double> share_now;      // fraction of clusters that see it now
  std::optional<int64_t> complete_at;   // Unix seconds: when every cluster sees it
};

class GraphTransform {
 public:
  virtual ~GraphTransform() = default;
  virtual std::string_view name() const = 0;
  virtual Result<Graph> Apply(Graph graph, TransformContext& context) const = 0;
  // The same from a graph the caller keeps (a shared cached graph). The default copies
  // it; transforms that only select part of a graph override this to skip the copy.
  virtual Result<Graph> ApplyTo(const Graph& graph, TransformContext& context) const {
    return Apply(graph, context);
  }
  // The client parameters the output depends on, besides the input graph. nullopt
  // means it depends on something else too (a clock, a lookup), so results must not be
  // cached by parameters.
  virtual std::optional<std::vector<std::string>> cache_key_parameters() const { return std::nullopt; }
  // Whether the output also depends on the context's entitlements (then they are part
  // of any cache key).
  virtual bool reads_entitlements() const { return false; }
  // Whether running on `graph` can change it; false lets a caller skip the step (and
  // keep serving a cached answer). Steps that cannot tell return true.
  virtual bool AppliesTo(const Graph& graph) const { return true; }

  // Optional fast path for per-request steps. Prepare() runs once per cached input;
  // AnswerKey() then names the output for one request: equal keys give equal outputs,
  // so a caller may reuse an answer. nullptr / nullopt: no fast path.
  virtual std::shared_ptr<const void> Prepare(const Graph& input, const TransformContext& context) const {
    return nullptr;
  }
  virtual std::optional<std::string> AnswerKey(const void* prepared, const TransformContext& context) const {
    return std::nullopt;
  }

  // Whether the releases it removes must look, to whoever asked, as if they did not
  // exist (hotfixes of other customers): an explanation then says "not a release"
  // rather than why, and lists none of them, as a path does.
  virtual bool removals_are_secret() const { return false; }

  // Why this step removed `loss` from the cluster's view, in its own words. Each step
  // explains itself, so a new or renamed step is never misread as another; the default
  // names the step ("removed_by_step").
  virtual StepReason ExplainLoss(const StepLoss& loss) const;
};

using TransformChain = std::vector<std::unique_ptr<GraphTransform>>;

// Runs each transform in order. An error is prefixed with the failing step's name.
Result<Graph> RunChain(const TransformChain& chain, Graph graph, TransformContext& context);
// The same, leaving `graph` untouched (the first step reads it through ApplyTo).
Result<Graph> RunChainOn(const TransformChain& chain, const Graph& graph, TransformContext& context);
// Steps [first, last) of `chain` on `graph`, leaving it untouched.
Result<Graph> RunStepsOn(const TransformChain& chain, size_t first, size_t last, const Graph& graph,
                         TransformContext& context);

}  // namespace cincinnati
