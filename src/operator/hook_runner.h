// ProcessHookRunner: the HookRunner port as a shell command (/bin/sh -c COMMAND) in its
// own process group, with extra environment variables, stdin from /dev/null, and a
// timeout after which the whole group gets SIGKILL. The exit code is the hook's answer
// (0 done, 1 not done yet, anything else an error: hooks.h decides); the last 4 KiB of
// its combined stdout and stderr are kept for messages and logs.
//
// Thread-safe (each call spawns its own process); never throws.
#pragma once

#include "operator/ports.h"

namespace cincinnati::upgrade {

class ProcessHookRunner : public HookRunner {
 public:
  HookResult Run(const std::string& command, const std::map<std::string, std::string>& env,
                 std::chrono::seconds timeout) override;
};

}  // namespace cincinnati::upgrade
