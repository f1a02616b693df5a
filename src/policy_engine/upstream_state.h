// The policy engine's upstream, as an explicit state machine.
//
//   state              what is served                     left on (outcome of a fetch)
//   kInProcess         graphs handed over by `serve`      never
//   kDetecting         errors (no graph yet)              graph -> kServing; view or missing_params -> kForwarding
//   kWaitingForGraph   errors (no graph yet)              graph -> kServing
//   kServing           the shared graph's answers         failure -> kServingStale; policy-engine answer -> kForwarding*
//   kServingStale      the last good graph's answers      graph -> kServing; policy-engine answer -> kForwarding*
//   kForwarding        forwarded queries' answers         graph -> kServing*
//   (* only when the kind is kAuto: a configured kind never changes)
//
// A "graph" is the graph builder's unversioned document; a "view" a versioned answer
// (a policy engine's); "missing_params" an upstream asking for the client's query
// (a policy engine, or a graph builder with mandatory parameters). With kind kAuto the
// engine keeps probing the upstream URL every TTL while forwarding, so an upstream
// that once asked for parameters is not taken for a policy engine for good.
// Pure functions; the service keeps the current state in an atomic and only its
// fetch thread moves it.
#pragma once

#include <string_view>

#include "core/status.h"

namespace cincinnati::server {

enum class UpstreamKind { kAuto, kGraphBuilder, kPolicyEngine };
// "auto", "graph-builder" or "policy-engine".
Result<UpstreamKind> ParseUpstreamKind(std::string_view text);

enum class UpstreamState { kInProcess, kDetecting, kWaitingForGraph, kServing, kServingStale, kForwarding };
inline constexpr UpstreamState kAllUpstreamStates[] = {UpstreamState::kInProcess,       UpstreamState::kDetecting,
                                                       UpstreamState::kWaitingForGraph, UpstreamState::kServing,
                                                       UpstreamState::kServingStale,    UpstreamState::kForwarding};
std::string_view UpstreamStateName(UpstreamState state);  // "serving_stale", ...

// What one fetch of the upstream URL (without a query) found.
enum class FetchOutcome {
  kGraph,              // a graph builder's document, parsed and servable
  kUnchanged,          // the same bytes as the graph being served
  kPolicyEngineAnswer, // a versioned view, or missing_params
  kFailed,             // transport error, error status, unreadable or unservable graph
};

UpstreamState InitialUpstreamState(bool in_process, UpstreamKind kind);
UpstreamState NextUpstreamState(UpstreamState current, UpstreamKind kind, FetchOutcome outcome);
// Whether the service answers from its shared graph (as opposed to forwarding).
inline bool ServesSharedGraph(UpstreamState s) { return s != UpstreamState::kForwarding; }

}  // namespace cincinnati::server
