// The update's phases (update_progress.h) and the only moves between them, checked by
// the update runner at every phase change. A move the table does not allow is a bug in
// the agent: the runner refuses it, keeps the phase, logs it and says it in its status's
// failure (Failing, reason UpdatePhaseInvalid), and the step stops.
//
//   Verifying -> Downloading -> Loading -> Applying -> Completed
//   Applying -> HandingOver -> Applying       the agent's own manifests, then the new agent
//   HandingOver -> HandingOver                handed over again (no successor ran)
//   Verifying | Downloading | Loading -> Failed -> Verifying      refused, retried later
//   Loading | Applying | HandingOver -> Downloading               the payload changed on disk
//   Verifying | Downloading | Loading | Failed -> Idle            the request went away
//   any -> Verifying                                              a new target starts over
//
// UpdatePhaseMoveAllowed is pure; both are thread-safe.
#pragma once

#include "agent/update_progress.h"

namespace cincinnati::agent {

bool UpdatePhaseMoveAllowed(UpdatePhase from, UpdatePhase to);

// Every phase change of the runner goes through here: `progress` moves to `to`, with
// `data` as the data of its new phase (none given: that phase's empty data), when the
// table allows it and the data is the phase's; otherwise it stays, the refusal is
// logged and said in `status`'s failure (UpdatePhaseInvalid), and the result is false.
bool MoveUpdatePhase(UpdateProgress& progress, UpdatePhase to, UpdateStatus& status, UpdatePhaseData data = {});

}  // namespace cincinnati::agent
