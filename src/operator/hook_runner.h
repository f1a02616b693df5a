// ProcessHookRunner: the HookRunner port as a shell command (/bin/sh -c COMMAND) in its
// own process group, with extra environment variables, stdin from /dev/null, and a
// timeout after which the whole group gets SIGKILL. The exit code is the hook's answer
// (0 done, 1 not done yet, anything else an error: hooks.h decides); the last 4 KiB of
// its combined stdout and stderr are kept for messages and logs.
//
// Hooks are fenced to the leadership term that started them:
//  - KillRunning() sends SIGKILL to the group of every hook this runner runs now; the
//    operator calls it when its term ends or lapses (a step-down, a lost lease, a clean
//    stop), so that a new leader never starts a hook while the last one's still runs.
//    A hook killed so answers an error that says why.
//  - Nothing of a hook outlives the operator's process, however it ends (kill -9
//    included): the shell gets SIGKILL (PR_SET_PDEATHSIG) when the thread that spawned
//    it ends, which is the call's thread, waiting for it; and a guard process
//    (env::SpawnOptions::group_dies_with_parent) kills the hook's whole process group
//    when the operator's process is gone. What remains after a kill -9: a process that
//    left the group on purpose (setsid, setpgid) runs on; and a hook killed halfway did
//    what it did (hooks must be idempotent).
//
// Thread-safe (each call spawns its own process); never throws.
#pragma once

#include <mutex>
#include <set>
#include <sys/types.h>

#include "operator/ports.h"

namespace cincinnati::upgrade {

class ProcessHookRunner : public HookRunner {
 public:
  HookResult Run(const std::string& command, const std::map<std::string, std::string>& env,
                 std::chrono::seconds timeout) override;
  // SIGKILL to every running hook's process group; returns how many.
  int KillRunning() override;

 private:
  std::mutex mu_;
  std::set<pid_t> running_;  // the process groups of running hooks (under mu_)
  std::set<pid_t> killed_;   // those KillRunning ended (under mu_)
};

}  // namespace cincinnati::upgrade
