#include "env/listener_passing.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>

namespace cincinnati::env {
namespace {

constexpr char kListenPidPrefix[] = "LISTEN_PID=";

// Everything exec needs, built before the fork: the child only fills in its pid.
struct ExecPlan {
  std::string path;
  std::vector<std::string> argv_text, environment_text;
  std::vector<char*> argv, environment;
  std::array<char, sizeof(kListenPidPrefix) + 24> listen_pid{};  // "LISTEN_PID=" and the digits
  std::vector<int> listeners;
};

bool IsListenVariable(const std::string& entry) {
  for (const char* name : {"LISTEN_FDS=", "LISTEN_PID=", "LISTEN_FDNAMES="}) {
    if (entry.rfind(name, 0) == 0) return true;
  }
  return false;
}

void Plan(ExecPlan& plan, const std::string& path, const std::vector<std::string>& argv,
          const std::vector<std::string>& environment, const std::vector<int>& listeners, const std::string& name) {
  plan.path = path;
  plan.argv_text = argv;
  plan.listeners = listeners;
  for (const std::string& entry : environment) {
    if (!IsListenVariable(entry)) plan.environment_text.push_back(entry);
  }
  if (!listeners.empty()) {
    std::string names;
    for (size_t i = 0; i < listeners.size(); ++i) names += (i ? ":" : "") + name;
    plan.environment_text.push_back(fmt::format("LISTEN_FDS={}", listeners.size()));
    plan.environment_text.push_back("LISTEN_FDNAMES=" + names);
  }
  for (std::string& a : plan.argv_text) plan.argv.push_back(a.data());
  plan.argv.push_back(nullptr);
  for (std::string& e : plan.environment_text) plan.environment.push_back(e.data());
  std::memcpy(plan.listen_pid.data(), kListenPidPrefix, sizeof(kListenPidPrefix));
  if (!listeners.empty()) plan.environment.push_back(plan.listen_pid.data());
  plan.environment.push_back(nullptr);
}

// Async-signal-safe: the decimal digits of this process's pid after "LISTEN_PID=".
void WriteOwnPid(ExecPlan& plan) {
  char digits[24];
  size_t count = 0;
  for (pid_t pid = ::getpid(); count == 0 || pid > 0; pid /= 10) digits[count++] = static_cast<char>('0' + pid % 10);
  char* at = plan.listen_pid.data() + sizeof(kListenPidPrefix) - 1;
  while (count > 0) *at++ = digits[--count];
  *at = '\0';
}

// Closes every descriptor from `first` on.
void CloseFrom(int first) {
  if (::syscall(SYS_close_range, static_cast<unsigned>(first), ~0U, 0) == 0) return;
  for (int fd = first; fd < 65536; ++fd) ::close(fd);  // kernels before 5.9
}

// Async-signal-safe: the listeners onto 3.., the error pipe (if any; followed as it
// moves) just after them, every other descriptor from 3 on closed, then exec. Returns
// exec's (or a step's) errno.
int ArrangeAndExec(ExecPlan& plan, int* error_pipe) {
  const int count = static_cast<int>(plan.listeners.size());
  const int pipe_at = 3 + count;
  // First out of the way, above everything that is moved below (a listener may sit
  // where another one goes, or where the pipe goes).
  std::array<int, kMostListeners> moved{};
  for (int i = 0; i < count; ++i) {
    moved[i] = ::fcntl(plan.listeners[i], F_DUPFD_CLOEXEC, pipe_at + 1);
    if (moved[i] < 0) return errno;
  }
  if (error_pipe) {
    const int pipe_moved = ::fcntl(*error_pipe, F_DUPFD_CLOEXEC, pipe_at + 1);
    if (pipe_moved < 0) return errno;
    *error_pipe = pipe_moved;  // the listeners may now overwrite where it was
  }
  for (int i = 0; i < count; ++i) {
    if (::dup2(moved[i], 3 + i) < 0) return errno;  // the copy is not close-on-exec
  }
  if (error_pipe) {
    if (::dup3(*error_pipe, pipe_at, O_CLOEXEC) < 0) return errno;
    *error_pipe = pipe_at;
  }
  CloseFrom(error_pipe ? pipe_at + 1 : pipe_at);
  WriteOwnPid(plan);
  ::execve(plan.path.c_str(), plan.argv.data(), plan.environment.data());
  return errno;
}

// The child's side: its own session, a clean signal state, then ArrangeAndExec; on
// failure the errno goes back through the pipe.
[[noreturn]] void BecomeSuccessor(ExecPlan& plan, int error_pipe) {
  ::setsid();
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &default_action, nullptr);
  const int error = ArrangeAndExec(plan, &error_pipe);
  [[maybe_unused]] const ssize_t written = ::write(error_pipe, &error, sizeof(error));
  ::_exit(127);
}

}  // namespace

Result<pid_t> StartWithListeners(const std::string& path, const std::vector<std::string>& argv,
                                 const std::vector<std::string>& environment, const std::vector<int>& listeners,
                                 const std::string& listener_name) {
  if (listeners.size() > kMostListeners) return Status::InvalidArgument(fmt::format("more than {} listeners", kMostListeners));
  ExecPlan plan;
  Plan(plan, path, argv, environment, listeners, listener_name);
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) return Status::IoError(fmt::format("pipe: {}", std::strerror(errno)));
  const pid_t pid = ::fork();
  if (pid == 0) BecomeSuccessor(plan, error_pipe[1]);
  const int fork_error = errno;
  ::close(error_pipe[1]);
  if (pid < 0) {
    ::close(error_pipe[0]);
    return Status::IoError(fmt::format("fork: {}", std::strerror(fork_error)));
  }
  // Closed by a successful exec (close-on-exec), or the child's errno.
  int child_error = 0;
  ssize_t n;
  while ((n = ::read(error_pipe[0], &child_error, sizeof(child_error))) < 0 && errno == EINTR) {
  }
  ::close(error_pipe[0]);
  if (n == 0) return pid;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return Status::IoError(
      fmt::format("{}: {}", path, n == sizeof(child_error) ? std::strerror(child_error) : "the new process ended before its exec"));
}

Status ExecWithListeners(const std::string& path, const std::vector<std::string>& argv,
                         const std::vector<std::string>& environment, const std::vector<int>& listeners,
                         const std::string& listener_name) {
  if (listeners.size() > kMostListeners) return Status::InvalidArgument(fmt::format("more than {} listeners", kMostListeners));
  ExecPlan plan;
  Plan(plan, path, argv, environment, listeners, listener_name);
  const int error = ArrangeAndExec(plan, nullptr);
  return Status::IoError(fmt::format("{}: {}", path, std::strerror(error)));
}

}  // namespace cincinnati::env
