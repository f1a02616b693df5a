#include "env/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>

extern char** environ;

namespace cincinnati::env {
namespace {

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) out.emplace_back(*e);
  return out;
}

// Descriptors the child's standard streams are dup2'ed from (-1: inherited), opened
// here, close-on-exec, so that a failure is reported before anything runs.
struct Streams {
  int fd[3] = {-1, -1, -1};
  int capture_read = -1;
  std::vector<int> owned;  // closed in this process once the child runs

  ~Streams() {
    for (int f : owned) ::close(f);
  }
};

Status OpenStreams(const SpawnOptions& o, Streams& s) {
  const Redirect* redirects[3] = {&o.stdin_to, &o.stdout_to, &o.stderr_to};
  int capture_write = -1;
  for (int i = 0; i < 3; ++i) {
    const Redirect& r = *redirects[i];
    switch (r.kind) {
      case Redirect::Kind::kInherit:
        break;
      case Redirect::Kind::kDevNull: {
        const int f = ::open("/dev/null", (i == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
        if (f < 0) return Status::IoError(std::string("open /dev/null: ") + std::strerror(errno));
        s.owned.push_back(f);
        s.fd[i] = f;
        break;
      }
      case Redirect::Kind::kFile: {
        // stdout and stderr into one file share one description (one offset).
        if (i == 2 && o.stdout_to.kind == Redirect::Kind::kFile && o.stdout_to.path == r.path) {
          s.fd[2] = s.fd[1];
          break;
        }
        const int flags = i == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC;
        const int f = ::open(r.path.c_str(), flags | O_CLOEXEC, 0644);
        if (f < 0) return Status::IoError("open " + r.path + ": " + std::strerror(errno));
        s.owned.push_back(f);
        s.fd[i] = f;
        break;
      }
      case Redirect::Kind::kCapture: {
        if (i == 0) return Status::InvalidArgument("stdin cannot be captured");
        if (capture_write < 0) {
          int fds[2];
          if (::pipe2(fds, O_CLOEXEC) != 0) return Status::IoError(std::string("pipe: ") + std::strerror(errno));
          s.capture_read = fds[0];
          capture_write = fds[1];
          s.owned.push_back(capture_write);
        }
        s.fd[i] = capture_write;
        break;
      }
    }
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<Process>> Process::Spawn(const SpawnOptions& o) {
  if (o.argv.empty() && o.program.empty()) return Status::InvalidArgument("no program to run");
  const std::string program = o.program.empty() ? o.argv[0] : o.program;
  Streams streams;
  Status opened = OpenStreams(o, streams);
  if (!opened.ok()) {
    if (streams.capture_read >= 0) ::close(streams.capture_read);
    return opened;
  }
  std::vector<std::string> args = o.argv;
  std::vector<std::string> env = o.environment ? *o.environment : CurrentEnvironment();
  std::vector<char*> argv = Pointers(args), envp = Pointers(env);
  pid_t pid = -1;
  if (!o.die_with_parent) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (!o.working_directory.empty()) posix_spawn_file_actions_addchdir_np(&actions, o.working_directory.c_str());
    for (int i = 0; i < 3; ++i) {
      if (streams.fd[i] >= 0) posix_spawn_file_actions_adddup2(&actions, streams.fd[i], i);
    }
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    short flags = 0;
    if (o.own_process_group) flags |= POSIX_SPAWN_SETPGROUP;
    if (o.own_session) flags |= POSIX_SPAWN_SETSID;
    if (o.clear_signal_mask) flags |= POSIX_SPAWN_SETSIGMASK;
    posix_spawnattr_setflags(&attr, flags);
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    const int rc = posix_spawn(&pid, program.c_str(), &actions, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
      if (streams.capture_read >= 0) ::close(streams.capture_read);
      return Status::IoError(std::strerror(rc));
    }
  } else {
    const pid_t parent = ::getpid();
    sigset_t none;
    sigemptyset(&none);
    pid = ::fork();
    if (pid == 0) {  // only async-signal-safe calls from here on
      ::prctl(PR_SET_PDEATHSIG, o.parent_death_signal);
      if (::getppid() != parent) _exit(126);  // the parent died before prctl
      if (o.own_session) ::setsid();
      if (o.own_process_group && !o.own_session) ::setpgid(0, 0);
      if (!o.working_directory.empty() && ::chdir(o.working_directory.c_str()) != 0) _exit(127);
      for (int i = 0; i < 3; ++i) {
        if (streams.fd[i] >= 0) ::dup2(streams.fd[i], i);
      }
      if (o.clear_signal_mask) ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::close_range(3, ~0U, 0);
      ::execve(program.c_str(), argv.data(), envp.data());
      _exit(127);
    }
    if (pid < 0) {
      const int error = errno;
      if (streams.capture_read >= 0) ::close(streams.capture_read);
      return Status::IoError(std::string("fork: ") + std::strerror(error));
    }
  }
  auto process = std::unique_ptr<Process>(new Process(pid, streams.capture_read));
  if (o.group_dies_with_parent && o.own_process_group) {
    Status guarded = process->StartGuard();
    if (!guarded.ok()) {
      process->SignalGroup(SIGKILL);
      process->Wait();
      return guarded;
    }
  }
  return process;
}

Status Process::StartGuard() {
  int ends[2];  // a socket pair rather than a pipe: the stand-down's send never raises SIGPIPE
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) return Status::IoError(std::string("socketpair: ") + std::strerror(errno));
  sigset_t all;
  sigfillset(&all);
  const pid_t group = pid_;
  const pid_t guard = ::fork();
  if (guard == 0) {  // only async-signal-safe calls from here on
    ::sigprocmask(SIG_SETMASK, &all, nullptr);  // only the pipe ends it
    ::dup2(ends[0], 0);
    ::close_range(1, ~0U, 0);  // no other guard's pipe, nor anything else, stays open here
    char byte;
    ssize_t n;
    while ((n = ::read(0, &byte, 1)) < 0 && errno == EINTR) {
    }
    if (n == 0) ::kill(-group, SIGKILL);  // EOF without a word: the parent is gone
    _exit(0);
  }
  const int error = errno;
  ::close(ends[0]);
  if (guard < 0) {
    ::close(ends[1]);
    return Status::IoError(std::string("fork: ") + std::strerror(error));
  }
  guard_pid_ = guard;
  guard_fd_ = ends[1];
  return Status::OK();
}

void Process::StandGuardDown() {
  if (guard_pid_ < 0) return;
  const char stand_down = 'x';
  // A failed write (it cannot: the guard reads until it gets a byte) would leave EOF,
  // on which the guard kills the group: the caller ended it already.
  while (::send(guard_fd_, &stand_down, 1, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
  ::close(guard_fd_);
  int wait_status = 0;
  while (::waitpid(guard_pid_, &wait_status, 0) < 0 && errno == EINTR) {
  }
  guard_pid_ = -1;
  guard_fd_ = -1;
}

Process::~Process() {
  CloseOutput();
  StandGuardDown();
}

void Process::Reaped(int wait_status) {
  reaped_ = true;
  if (WIFEXITED(wait_status)) {
    status_ = {.exited = true, .code = WEXITSTATUS(wait_status), .signal = 0};
  } else {
    status_ = {.exited = false, .code = -1, .signal = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0};
  }
}

void Process::Signal(int signal) {
  if (!reaped_) ::kill(pid_, signal);
}

void Process::SignalGroup(int signal) { ::kill(-pid_, signal); }

std::optional<ExitStatus> Process::Poll() {
  if (reaped_) return status_;
  int wait_status = 0;
  if (::waitpid(pid_, &wait_status, WNOHANG) == pid_) {
    Reaped(wait_status);
    return status_;
  }
  return std::nullopt;
}

ExitStatus Process::Wait() {
  if (reaped_) return status_;
  int wait_status = 0;
  while (::waitpid(pid_, &wait_status, 0) < 0 && errno == EINTR) {
  }
  Reaped(wait_status);
  return status_;
}

std::optional<ExitStatus> Process::WaitFor(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto status = Poll()) return status;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool Process::DrainOutput(std::chrono::milliseconds timeout, const std::function<void(std::string_view)>& sink) {
  if (output_fd_ < 0) return true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{output_fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) return true;
    if (ready <= 0) continue;
    const ssize_t n = ::read(output_fd_, buf, sizeof buf);
    if (n > 0) {
      sink(std::string_view(buf, static_cast<size_t>(n)));
      continue;
    }
    if (n == 0 || (errno != EINTR && errno != EAGAIN)) return true;  // every writer closed it
  }
}

void Process::CloseOutput() {
  if (output_fd_ >= 0) ::close(output_fd_);
  output_fd_ = -1;
}

std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& set) {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    if (!set.count(std::string(entry.substr(0, entry.find('='))))) out.emplace_back(entry);
  }
  for (const auto& [name, value] : set) out.push_back(name + "=" + value);
  return out;
}

Status ExecInPlace(const std::string& path, const std::vector<std::string>& argv, const std::vector<std::string>& environment) {
  std::vector<std::string> args = argv, env = environment;
  std::vector<char*> a = Pointers(args), e = Pointers(env);
  ::execve(path.c_str(), a.data(), e.data());
  return Status::IoError(std::strerror(errno));
}

bool SignalProcessGroup(pid_t group, int signal) { return group > 0 && ::kill(-group, signal) == 0; }

void SignalSelf(int signal) { ::kill(::getpid(), signal); }

pid_t SelfPid() { return ::getpid(); }

std::string SelfExecutablePath() {
  char buffer[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "/proc/self/exe";
}

}  // namespace cincinnati::env
