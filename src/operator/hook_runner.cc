#include "operator/hook_runner.h"

#include <fmt/format.h>
#include <signal.h>

#include "env/process.h"

namespace cincinnati::upgrade {
namespace {

constexpr size_t kKeep = 4096;

void Keep(std::string& out, std::string_view piece) {
  out.append(piece);
  if (out.size() > kKeep) out.erase(0, out.size() - kKeep);
}

}  // namespace

HookResult ProcessHookRunner::Run(const std::string& command, const std::map<std::string, std::string>& env,
                                  std::chrono::seconds timeout) {
  HookResult result;
  env::SpawnOptions options;
  options.argv = {"/bin/sh", "-c", command};
  options.environment = env::EnvironmentWith(env);
  options.stdin_to = env::Redirect::DevNull();
  options.stdout_to = options.stderr_to = env::Redirect::Capture();
  options.own_process_group = true;  // a timeout kills all it started
  options.clear_signal_mask = true;
  auto spawned = env::Process::Spawn(options);
  if (!spawned.ok()) {
    result.output = fmt::format("cannot run the hook: {}", spawned.status().message());
    return result;
  }
  env::Process& process = **spawned;
  const bool timed_out = !process.DrainOutput(timeout, [&](std::string_view piece) { Keep(result.output, piece); });
  if (timed_out) process.SignalGroup(SIGKILL);
  process.CloseOutput();
  const env::ExitStatus status = process.Wait();
  if (!timed_out) process.SignalGroup(SIGKILL);  // children left in the background go too
  if (timed_out) {
    result.output += fmt::format("{}(the hook did not finish within {} s and was killed)", result.output.empty() ? "" : "\n",
                                 timeout.count());
    result.exit_code = -1;
  } else if (status.exited) {
    result.exit_code = status.code;
  } else {
    result.output += fmt::format("{}(the hook was ended by signal {})", result.output.empty() ? "" : "\n", status.signal);
  }
  return result;
}

}  // namespace cincinnati::upgrade
