#include "agent/update_phases.h"

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

}  // namespace cincinnati::agent
