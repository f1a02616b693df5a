#include "operator/hook_runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "env/clock.h"

extern char** environ;

namespace cincinnati::upgrade {
namespace {

constexpr size_t kKeep = 4096;

void Keep(std::string& out, const char* data, size_t n) {
  out.append(data, n);
  if (out.size() > kKeep) out.erase(0, out.size() - kKeep);
}

}  // namespace

HookResult ProcessHookRunner::Run(const std::string& command, const std::map<std::string, std::string>& env,
                                  std::chrono::seconds timeout) {
  HookResult result;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    result.output = fmt::format("cannot run the hook: pipe: {}", std::strerror(errno));
    return result;
  }
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    const std::string name(entry.substr(0, entry.find('=')));
    if (!env.count(name)) env_strings.emplace_back(entry);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: a timeout kills all it started
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  std::string sh = "/bin/sh", dash_c = "-c", cmd = command;
  char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    result.output = fmt::format("cannot run the hook: {}", std::strerror(rc));
    return result;
  }
  const auto deadline = env::RealClock().Steady() + timeout;  // poll() below waits in real time
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - env::RealClock().Steady());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) {
      Keep(result.output, buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0 || (errno != EINTR && errno != EAGAIN)) break;  // every writer closed: the hook (and its children) ended
  }
  if (timed_out) ::kill(-pid, SIGKILL);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!timed_out) ::kill(-pid, SIGKILL);  // children left in the background go too
  if (timed_out) {
    result.output += fmt::format("{}(the hook did not finish within {} s and was killed)", result.output.empty() ? "" : "\n",
                                 timeout.count());
    result.exit_code = -1;
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else {
    result.output += fmt::format("{}(the hook was ended by signal {})", result.output.empty() ? "" : "\n", WTERMSIG(status));
  }
  return result;
}

}  // namespace cincinnati::upgrade
