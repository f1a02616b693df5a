// The agent's process hand-over: after an update applied the agent's own manifests, the
// running agent ends and a new process of the (new) binary takes its place, with the
// hand-over's id in its environment so that it finishes what the old one started, and
// with the old one's listening sockets, so that the API never refuses a connection.
//
// Contract:
// - HandOverTo starts `binary` ("": this very binary, through /proc/self/exe, even when
//   its file was replaced) with `args` (argv[0] kept as given) in its own session, with
//   stdin, stdout and stderr, `listeners` at descriptors 3.. as systemd's socket
//   activation passes them (LISTEN_FDS, LISTEN_PID = the new process's pid,
//   LISTEN_FDNAMES=agent-api), and no other descriptor of this process: no lock, no
//   state file, no connection. The caller has stopped accepting on `listeners` (they
//   stay open: connections that arrive meanwhile wait in the kernel's backlog for the
//   new agent), unlocked the state directory and ended its requests; it exits after an
//   OK, closing its own copies.
// - A hand-over never leaves no agent running: when this process is process 1 (a
//   container's first, whose exit would end the container) or the new process cannot be
//   started, this process execs the new agent in place, with the listeners passed the
//   same way (LISTEN_PID is then this pid, which exec keeps); an error means that
//   failed too.
// - Why a fork of our own (env/listener_passing.h) rather than posix_spawn: LISTEN_PID must
//   be the new process's pid, which only the child knows before its exec; systemd sets
//   it the same way. The new agent thus takes the sockets by the standard rule (LISTEN_PID
//   is mine), with no special case for hand-overs, and a stray LISTEN_FDS meant for
//   another process is never taken.
// - The process keeps its name: run through /proc/self/exe, the kernel would name the new
//   process "exe"; it is told the old one's name (prctl PR_GET_NAME) and takes it back at
//   start (TakeHandOverId), so that `ps -o comm=` shows the same name, and `ps -o args=`
//   the same command line (argv[0] kept). Exec'ing the file's path instead would name it
//   too, but could run another binary than this one when the update replaced the file.
// - A named `binary` gets the sockets only when TakesListeners says it takes them: an
//   agent older than this contract would find its port held by the socket it inherited
//   and could not bind it. Without them its port is closed until it binds it.
// - TakesListeners: whether `binary agent --help` mentions LISTEN_FDS (as this one's
//   --port help does); false when it cannot be run or says nothing within 10 s.
// - TakeHandOverId is the new agent's side: the id it was started with ("" when none),
//   removed from its environment so that it passes it on to nobody; and the process
//   name, restored. The listeners are taken by http_server::TakeInheritedListeners.
// Call from the main thread at the end of the run; never throws.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "http_server/listening_socket.h"

namespace cincinnati::agent {

// LISTEN_FDNAMES of the agent's API listeners.
inline constexpr char kApiListenerName[] = "agent-api";

Status HandOverTo(const std::string& binary, const std::vector<std::string>& args, const std::string& id,
                  std::vector<http_server::ListeningSocket> listeners);

bool TakesListeners(const std::string& binary);

std::string TakeHandOverId();

}  // namespace cincinnati::agent
