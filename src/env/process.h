// Process: child processes (spawned, signalled, waited for) and the re-exec of this one,
// behind one interface, so that process groups, time-outs and exit codes are decided in
// one place and no module outside src/env calls fork, exec, kill or waitpid itself.
//
// Contract:
// - Spawn starts `program` (argv[0] when empty; a path: no PATH search) with exactly the stated environment
//   (this process's when none is given), working directory, and standard streams; every
//   other descriptor of this process is closed in the child. It returns once the program runs, or an error naming why it could not be
//   run: the errno text of the step that failed ("pipe: ...", "open PATH: ...", or the
//   spawn's own, bare) — except with die_with_parent, where a program that cannot be
//   executed is a child that exits 127 (fork and exec, to set PR_SET_PDEATHSIG between).
//   With group_dies_with_parent, a guard process that cannot be started is an error,
//   and the child is killed (its group) and reaped before Spawn returns it.
// - The signal mask is the spawning thread's unless clear_signal_mask says otherwise.
// - The Process object owns the child until Wait or Poll reaps it; after that Signal is
//   a no-op (the pid may be someone else's), but SignalGroup still reaches the group,
//   which outlives its leader while anything it started runs. The destructor neither
//   signals nor reaps: a caller that wants the child gone stops it first.
// - ExitStatus says how it ended: an exit code, or the signal that ended it.
// - Time-outs are measured on the steady clock; Wait and DrainOutput retry EINTR.
//
// Thread-safety: a Process is used by one thread at a time; the free functions are
// thread-safe. Nothing throws.
#pragma once

#include <sys/types.h>

#include <csignal>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cincinnati::env {

// Where one of a child's standard streams goes.
struct Redirect {
  enum class Kind { kInherit, kDevNull, kFile, kCapture };
  Kind kind = Kind::kInherit;
  std::string path;  // kFile: created or truncated, mode 0644
  static Redirect Inherit() { return {}; }
  static Redirect DevNull() { return {Kind::kDevNull, {}}; }
  static Redirect File(std::string path) { return {Kind::kFile, std::move(path)}; }
  // Into a pipe this process reads with Process::DrainOutput; stdout and stderr both
  // captured share one pipe, in the order written.
  static Redirect Capture() { return {Kind::kCapture, {}}; }
};

struct SpawnOptions {
  std::vector<std::string> argv;                        // with argv[0]
  std::string program;                                  // the path run; empty: argv[0]
  std::optional<std::vector<std::string>> environment;  // NAME=VALUE; none: this process's
  std::string working_directory;                        // empty: this process's
  Redirect stdin_to = Redirect::Inherit(), stdout_to = Redirect::Inherit(), stderr_to = Redirect::Inherit();
  // Its own process group (pgid = its pid), so that SignalGroup reaches all it starts.
  bool own_process_group = false;
  // Its own session (setsid): no controlling terminal, and no signal of this process's
  // group or session reaches it.
  bool own_session = false;
  // `parent_death_signal` (SIGTERM unless set) when this process dies, so that an
  // interrupted parent leaves no child behind. Linux sends it when the *thread* that
  // spawned the child ends: spawn from a thread that outlives the child (one that waits
  // for it does). It reaches the child only, not what the child starts (kill its group).
  bool die_with_parent = false;
  int parent_death_signal = SIGTERM;  // SIGKILL for a child that must not outlive this process at all
  // An empty signal mask in the child instead of the spawning thread's (which may block
  // signals it waits for with sigwait).
  bool clear_signal_mask = false;
  // With own_process_group: the child's whole group gets SIGKILL when this process
  // dies, however it dies (kill -9 included), so that not even what the child started
  // outlives it. A guard process (forked from this one, blocking every signal, holding
  // nothing but one end of a pipe) waits for the pipe's other end, which only this
  // process holds, to close: EOF is this process's death. The Process object stands the
  // guard down when it is destroyed (the group is the caller's to end by then).
  bool group_dies_with_parent = false;
};

struct ExitStatus {
  bool exited = false;  // by exit(): code is set; otherwise ended by `signal`
  int code = -1;
  int signal = 0;
};

class Process {
 public:
  static Result<std::unique_ptr<Process>> Spawn(const SpawnOptions& options);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  // kill(pid, signal), a no-op once reaped; kill(-pid, signal), the group.
  void Signal(int signal);
  void SignalGroup(int signal);
  // Reaps the child if it has ended (never blocks): its status, or none while it runs.
  std::optional<ExitStatus> Poll();
  // Blocks until it ends.
  ExitStatus Wait();
  // Blocks until it ends or `timeout` passes (none then).
  std::optional<ExitStatus> WaitFor(std::chrono::milliseconds timeout);
  bool reaped() const { return reaped_; }

  // Captured output (Redirect::Capture): hands each piece to `sink` as it comes, until
  // every writer has closed the pipe (the child and all it started ended or closed it;
  // also on a read error) — true — or `timeout` passes first — false.
  bool DrainOutput(std::chrono::milliseconds timeout, const std::function<void(std::string_view)>& sink);
  // Closes this end of the capture pipe (a writer left then gets SIGPIPE).
  void CloseOutput();

 private:
  Process(pid_t pid, int output_fd) : pid_(pid), output_fd_(output_fd) {}
  void Reaped(int wait_status);
  Status StartGuard();  // group_dies_with_parent
  void StandGuardDown();

  pid_t pid_;
  int output_fd_;
  pid_t guard_pid_ = -1;  // group_dies_with_parent: the guard, and this process's end of its pipe
  int guard_fd_ = -1;
  bool reaped_ = false;
  ExitStatus status_;
};

// This process's environment (NAME=VALUE, in order) without the variables named in `set`,
// then `set`'s, in its order.
std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& set);

// Replaces this process's image (execve): returns only when that failed, with the errno
// text. Descriptors without close-on-exec stay open in the new image.
Status ExecInPlace(const std::string& path, const std::vector<std::string>& argv,
                   const std::vector<std::string>& environment);

// Sends `signal` to this process (e.g. to end a signal wait of its own main thread).
void SignalSelf(int signal);

// kill(-group, signal): every process of a process group (one Spawn made with
// own_process_group, from any thread); false when none received it.
bool SignalProcessGroup(pid_t group, int signal);

// This process's id (1: a container's first process, whose exit ends the container).
pid_t SelfPid();

// The path of this process's executable (/proc/self/exe resolved; that link itself when
// it cannot be read).
std::string SelfExecutablePath();

}  // namespace cincinnati::env
