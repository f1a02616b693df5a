#include "agent/hand_over.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>

#include <csignal>
#include <cstdlib>

#include "env/listener_passing.h"
#include "env/process.h"

namespace cincinnati::agent {
namespace {

// The hand-over's id travels to the new agent in its environment (update_progress.h).
constexpr char kHandOverIdVariable[] = "CINCINNATI_AGENT_HAND_OVER_ID";
// The old agent's process name, for a new agent run through /proc/self/exe.
constexpr char kProcessNameVariable[] = "CINCINNATI_AGENT_PROCESS_NAME";

std::string OwnProcessName() {
  char name[17] = {};  // the kernel's 16 bytes, NUL included
  if (::prctl(PR_GET_NAME, name, 0, 0, 0) != 0) return "";
  return name;
}

std::string Describe(const std::string& binary) { return binary.empty() ? "this binary" : binary; }

}  // namespace

bool TakesListeners(const std::string& binary) {
  env::SpawnOptions options;
  options.program = binary;
  options.argv = {binary, "agent", "--help"};
  options.stdin_to = env::Redirect::DevNull();
  options.stdout_to = env::Redirect::Capture();
  options.stderr_to = env::Redirect::DevNull();
  options.own_process_group = true;  // what it starts is stopped with it
  auto help = env::Process::Spawn(options);
  if (!help.ok()) return false;
  std::string text;
  // A cap, not a wait: a binary that does not answer --help at once is not one of ours.
  if (!(*help)->DrainOutput(std::chrono::seconds(10), [&](std::string_view piece) { text.append(piece); })) {
    (*help)->SignalGroup(SIGKILL);
  }
  (*help)->Wait();
  return text.find("LISTEN_FDS") != std::string::npos;
}

Status HandOverTo(const std::string& binary, const std::vector<std::string>& args, const std::string& id,
                  std::vector<http_server::ListeningSocket> listeners) {
  if (!binary.empty() && !listeners.empty() && !TakesListeners(binary)) {
    // An older agent binds its port: closed, the socket no longer holds it.
    spdlog::warn("handing over to {}, which does not take listening sockets (LISTEN_FDS): its port is closed until it binds it",
                 binary);
    listeners.clear();
  }
  // /proc/self/exe runs this very binary, even when its file was replaced or removed.
  const std::string self_path = "/proc/self/exe";
  const std::string path = binary.empty() ? self_path : binary;
  const std::string name = OwnProcessName();
  const std::vector<std::string> self_environment =
      env::EnvironmentWith({{kHandOverIdVariable, id}, {kProcessNameVariable, name}});
  const std::vector<std::string> environment =
      binary.empty() ? self_environment : env::EnvironmentWith({{kHandOverIdVariable, id}});
  std::vector<int> fds;
  for (const auto& listener : listeners) fds.push_back(listener.fd());
  if (env::SelfPid() == 1) {
    // A container's first process: its exit would end the container, the new agent
    // with it. It becomes the new agent instead.
    spdlog::info("handing over to {} in place (this is process 1), with {} listening socket(s)", Describe(binary), fds.size());
    const Status exec = env::ExecWithListeners(path, args, environment, fds, kApiListenerName);
    spdlog::error("handing over: cannot run {} in place ({})", path, exec.message());
  }
  auto started = env::StartWithListeners(path, args, environment, fds, kApiListenerName);
  if (started.ok()) {
    spdlog::info("handed over to {} (pid {}), with {} listening socket(s)", Describe(binary), *started, fds.size());
    return Status::OK();
  }
  const std::string start_error(started.status().message());
  spdlog::error("handing over: cannot start {} ({}); this process becomes the new agent", path, start_error);
  const Status exec = env::ExecWithListeners(self_path, args, self_environment, fds, kApiListenerName);
  return Status::IoError(fmt::format("handing over to {}: {}; and exec of this binary: {}", path, start_error, exec.message()));
}

std::string TakeHandOverId() {
  if (const char* name = std::getenv(kProcessNameVariable)) {
    if (*name) ::prctl(PR_SET_NAME, name, 0, 0, 0);  // a name the kernel cuts to 15 bytes
    ::unsetenv(kProcessNameVariable);
  }
  const char* id = std::getenv(kHandOverIdVariable);
  if (!id) return "";
  std::string out = id;
  ::unsetenv(kHandOverIdVariable);
  return out;
}

}  // namespace cincinnati::agent
