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

bool MoveUpdatePhase(UpdateProgress& progress, UpdatePhase to, ClusterVersion& cv, const std::string& now) {
  if (UpdatePhaseMoveAllowed(progress.phase, to)) {
    progress.phase = to;
    return true;
  }
  const std::string message = fmt::format("The update cannot move from {} to {}: not an allowed move (a bug in the agent)",
                                          UpdatePhaseName(progress.phase), UpdatePhaseName(to));
  spdlog::error("{}", message);
  cv.SetCondition({"Failing", "True", "UpdatePhaseInvalid", message, now});
  return false;
}

}  // namespace cincinnati::agent
