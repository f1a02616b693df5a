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
  // Nothing of the hook outlives the operator: the shell gets SIGKILL when this thread
  // ends (it waits for the hook, so when the process ends), and a guard kills the whole
  // group then, however the operator died.
  options.die_with_parent = true;
  options.parent_death_signal = SIGKILL;
  options.group_dies_with_parent = true;
  auto spawned = env::Process::Spawn(options);
  if (!spawned.ok()) {
    result.output = fmt::format("cannot run the hook: {}", spawned.status().message());
    return result;
  }
  env::Process& process = **spawned;
  {
    std::lock_guard lock(mu_);
    running_.insert(process.pid());  // the group's id: its own process group
  }
  const bool timed_out = !process.DrainOutput(timeout, [&](std::string_view piece) { Keep(result.output, piece); });
  if (timed_out) process.SignalGroup(SIGKILL);
  process.CloseOutput();
  const env::ExitStatus status = process.Wait();
  bool term_ended = false;
  {
    std::lock_guard lock(mu_);
    running_.erase(process.pid());
    term_ended = killed_.erase(process.pid()) > 0;
  }
  if (!timed_out) process.SignalGroup(SIGKILL);  // children left in the background go too
  if (term_ended) {
    result.output += fmt::format("{}(the hook was killed: this replica's leadership term ended)", result.output.empty() ? "" : "\n");
    result.exit_code = -1;
  } else if (timed_out) {
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

int ProcessHookRunner::KillRunning() {
  std::lock_guard lock(mu_);
  int killed = 0;
  for (const pid_t group : running_) {
    // Under mu_: its call erases it right after reaping the shell, as it kills the group itself.
    if (env::SignalProcessGroup(group, SIGKILL)) ++killed;
    killed_.insert(group);
  }
  return killed;
}

}  // namespace cincinnati::upgrade
