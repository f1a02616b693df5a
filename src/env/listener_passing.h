// Listener passing: starting a process with listening sockets it takes over, passed the
// way systemd's socket activation passes them (the agent's hand-over gives its API's
// socket to its successor; http_server/listening_socket.h takes them on the other side).
// It lives with the environment layer because it forks and execs itself: LISTEN_PID must
// be the new process's own pid, known only in the child between fork and exec, and
// env::Process (posix_spawn) closes every descriptor from 3 on.
//
// Contract:
// - StartWithListeners starts `path` with `argv` (argv[0] included) and `environment`
//   (NAME=VALUE) plus LISTEN_FDS=<count>, LISTEN_PID=<the new process's own pid> and
//   LISTEN_FDNAMES=<listener_name, once per socket>, in its own session, with an empty
//   signal mask and SIGPIPE at its default action, and with descriptors 0, 1 and 2 as
//   this process has them, `listeners` at 3, 4, ... in order (not close-on-exec), and
//   no other descriptor. It returns the new process's pid once the exec succeeded, or an
//   error naming the step that failed (the process then exited, and is reaped here).
//   The LISTEN_* variables this process may have are replaced, never passed on.
// - ExecWithListeners does the same in this very process (which keeps its pid, so that
//   LISTEN_PID is this pid), but in the same session: it returns only when the exec
//   failed, and then this process's descriptors from 3 on are gone or overwritten.
// - At most kMostListeners sockets. The caller keeps its descriptors (StartWithListeners
//   neither closes nor changes them).
// Between fork and exec the child makes async-signal-safe calls only (the caller has
// threads), and allocates nothing. Never throws.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/status.h"

namespace cincinnati::env {

inline constexpr size_t kMostListeners = 16;

Result<pid_t> StartWithListeners(const std::string& path, const std::vector<std::string>& argv,
                                 const std::vector<std::string>& environment, const std::vector<int>& listeners,
                                 const std::string& listener_name);

Status ExecWithListeners(const std::string& path, const std::vector<std::string>& argv,
                         const std::vector<std::string>& environment, const std::vector<int>& listeners,
                         const std::string& listener_name);

}  // namespace cincinnati::env
