// The agent's process hand-over: after an update applied the agent's own manifests, the
// running agent ends and a new process of the (new) binary takes its place, with the
// hand-over's id in its environment so that it finishes what the old one started.
//
// Contract:
// - HandOverTo starts `binary` ("": this very binary, through /proc/self/exe, even when
//   its file was replaced) with `args` in its own session, with stdin, stdout and stderr
//   and no other descriptor of this process: no listener, no lock, no state file. The
//   caller exits after an OK.
// - A hand-over never leaves no agent running: when this process is process 1 (a
//   container's first, whose exit would end the container) or the new process cannot be
//   started, this process execs the new agent in place; an error means that failed too.
// - TakeHandOverId is the new agent's side: the id it was started with ("" when none),
//   removed from its environment so that it passes it on to nobody.
// Call from the main thread at the end of the run; never throws.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace cincinnati::agent {

Status HandOverTo(const std::string& binary, const std::vector<std::string>& args, const std::string& id);

std::string TakeHandOverId();

}  // namespace cincinnati::agent
