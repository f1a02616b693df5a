#include "agent/hand_over.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "env/process.h"

namespace cincinnati::agent {
namespace {

// The hand-over's id travels to the new agent in its environment (update_progress.h).
constexpr char kHandOverIdVariable[] = "CINCINNATI_AGENT_HAND_OVER_ID";

}  // namespace

Status HandOverTo(const std::string& binary, const std::vector<std::string>& args, const std::string& id) {
  const std::vector<std::string> environment = env::EnvironmentWith({{kHandOverIdVariable, id}});
  // /proc/self/exe runs this very binary, even when its file was replaced or removed.
  const std::string path = binary.empty() ? "/proc/self/exe" : binary;
  if (env::SelfPid() == 1) {
    // A container's first process: its exit would end the container, the new agent
    // with it. It becomes the new agent instead.
    spdlog::info("handing over to {} in place (this is process 1)", binary.empty() ? "this binary" : binary);
    const Status exec = env::ExecInPlace(path, args, environment);
    spdlog::error("handing over: cannot run {} in place ({})", path, exec.message());
  }
  env::SpawnOptions options;
  options.program = path;  // argv[0] stays the command line's own
  options.argv = args;
  options.environment = environment;
  options.own_session = true;
  auto spawned = env::Process::Spawn(options);
  if (spawned.ok()) {
    spdlog::info("handed over to {} (pid {})", binary.empty() ? "this binary" : binary, (*spawned)->pid());
    return Status::OK();
  }
  const std::string spawn_error(spawned.status().message());
  spdlog::error("handing over: cannot start {} ({}); this process becomes the new agent", path, spawn_error);
  const Status exec = env::ExecInPlace("/proc/self/exe", args, environment);
  return Status::IoError(fmt::format("handing over to {}: {}; and exec of this binary: {}", path, spawn_error, exec.message()));
}

std::string TakeHandOverId() {
  const char* id = std::getenv(kHandOverIdVariable);
  if (!id) return "";
  std::string out = id;
  ::unsetenv(kHandOverIdVariable);
  return out;
}

}  // namespace cincinnati::agent
