#include "agent/update_phases.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace cincinnati::agent {

bool UpdatePhaseMoveAllowed(UpdatePhase from, UpdatePhase to) {
  using P = UpdatePhase;
  switch (to) {
    case P::kVerifying:
      return true;  // a new target, from anywhere; the retry of a failure
    case P::kDownloading:
      return from == P::kVerifying || from == P::kLoading || from == P::kApplying || from == P::kHandingOver;
    case P::kLoading:
      return from == P::kDownloading;
    case P::kApplying:
      return from == P::kLoading || from == P::kHandingOver;
    case P::kHandingOver:
      return from == P::kApplying || from == P::kHandingOver;
    case P::kCompleted:
      return from == P::kApplying;
    case P::kFailed:
      return from == P::kVerifying || from == P::kDownloading || from == P::kLoading;
    case P::kIdle:
      return from == P::kVerifying || from == P::kDownloading || from == P::kLoading || from == P::kFailed;
  }
  return false;
}

namespace {

// What an operator reading the log sees of the update: one line per phase, so that a
// hand-over reads as a step of the update rather than as a crash.
std::string Doing(const UpdateProgress& p, UpdatePhase to) {
  const std::string target = p.version.empty() ? p.image : p.version + " (" + p.image + ")";
  switch (to) {
    case UpdatePhase::kVerifying: return "verifying the signatures of " + target;
    case UpdatePhase::kDownloading: return "downloading " + target;
    case UpdatePhase::kLoading: return "loading the payload of " + target;
    case UpdatePhase::kApplying: return "applying " + target + ": the agent first, then each component in order";
    case UpdatePhase::kHandingOver: return "handing over to the new release's agent for " + target;
    case UpdatePhase::kCompleted: return "completed: " + target + " is applied and every component reports it";
    case UpdatePhase::kFailed: {
      const FailedPhase failed = p.failed() ? *p.failed() : FailedPhase{};
      return "failed: " + target + ": " + failed.reason + ": " + failed.message;
    }
    case UpdatePhase::kIdle: return "stopped: no update is asked for";
  }
  return "";
}

// The data a phase carries: the one given, or the phase's empty one when none is given;
// nullopt when the data given is another phase's.
std::optional<UpdatePhaseData> DataOf(UpdatePhase phase, UpdatePhaseData data) {
  UpdatePhaseData empty;
  if (phase == UpdatePhase::kFailed) empty = FailedPhase{};
  if (phase == UpdatePhase::kHandingOver) empty = HandingOverPhase{};
  if (std::holds_alternative<std::monostate>(data)) return empty;
  if (data.index() != empty.index()) return std::nullopt;
  return data;
}

}  // namespace

bool MoveUpdatePhase(UpdateProgress& progress, UpdatePhase to, UpdateStatus& status, UpdatePhaseData data) {
  std::optional<UpdatePhaseData> fits = DataOf(to, std::move(data));
  if (UpdatePhaseMoveAllowed(progress.phase, to) && fits) {
    const bool moves = progress.phase != to;
    progress.phase = to;
    progress.phase_data = std::move(*fits);
    if (moves) spdlog::info("update: {}", Doing(progress, to));
    return true;
  }
  const std::string message =
      fmt::format("The update cannot move from {} to {}{}: not an allowed move (a bug in the agent)", UpdatePhaseName(progress.phase),
                  UpdatePhaseName(to), fits ? "" : " with another phase's data");
  spdlog::error("{}", message);
  status.failure = UpdateStatus::Failure{"UpdatePhaseInvalid", message};
  return false;
}

}  // namespace cincinnati::agent
