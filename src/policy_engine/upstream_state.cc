#include "policy_engine/upstream_state.h"

#include <fmt/format.h>

namespace cincinnati::server {

Result<UpstreamKind> ParseUpstreamKind(std::string_view text) {
  if (text == "auto") return UpstreamKind::kAuto;
  if (text == "graph-builder") return UpstreamKind::kGraphBuilder;
  if (text == "policy-engine") return UpstreamKind::kPolicyEngine;
  return Status::InvalidArgument(
      fmt::format("upstream kind '{}': expected auto, graph-builder or policy-engine", text));
}

std::string_view UpstreamStateName(UpstreamState state) {
  switch (state) {
    case UpstreamState::kInProcess: return "in_process";
    case UpstreamState::kDetecting: return "detecting";
    case UpstreamState::kWaitingForGraph: return "waiting_for_graph";
    case UpstreamState::kServing: return "serving";
    case UpstreamState::kServingStale: return "serving_stale";
    case UpstreamState::kForwarding: return "forwarding";
  }
  return "unknown";
}

UpstreamState InitialUpstreamState(bool in_process, UpstreamKind kind) {
  if (in_process) return UpstreamState::kInProcess;
  switch (kind) {
    case UpstreamKind::kAuto: return UpstreamState::kDetecting;
    case UpstreamKind::kGraphBuilder: return UpstreamState::kWaitingForGraph;
    case UpstreamKind::kPolicyEngine: return UpstreamState::kForwarding;
  }
  return UpstreamState::kDetecting;
}

UpstreamState NextUpstreamState(UpstreamState current, UpstreamKind kind, FetchOutcome outcome) {
  using S = UpstreamState;
  if (current == S::kInProcess) return current;
  if (kind == UpstreamKind::kPolicyEngine) return S::kForwarding;
  // A configured graph builder that answers like a policy engine is a failed fetch.
  if (kind == UpstreamKind::kGraphBuilder && outcome == FetchOutcome::kPolicyEngineAnswer) outcome = FetchOutcome::kFailed;
  const bool good = outcome == FetchOutcome::kGraph || outcome == FetchOutcome::kUnchanged;
  switch (current) {
    case S::kDetecting:
      if (outcome == FetchOutcome::kPolicyEngineAnswer) return S::kForwarding;
      return outcome == FetchOutcome::kGraph ? S::kServing : S::kDetecting;
    case S::kWaitingForGraph:
      return outcome == FetchOutcome::kGraph ? S::kServing : S::kWaitingForGraph;
    case S::kServing:
    case S::kServingStale:
      if (good) return S::kServing;
      if (outcome == FetchOutcome::kPolicyEngineAnswer) return S::kForwarding;
      return S::kServingStale;
    case S::kForwarding:
      return outcome == FetchOutcome::kGraph ? S::kServing : S::kForwarding;
    case S::kInProcess:
      break;
  }
  return current;
}

}  // namespace cincinnati::server
