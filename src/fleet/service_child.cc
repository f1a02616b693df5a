#include "fleet/service_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "env/clock.h"
#include "http/client.h"

namespace cincinnati::fleet {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int PortIn(const std::string& text, const std::string& name) {
  const size_t at = text.find(name + "=");
  if (at == std::string::npos || (at > 0 && text[at - 1] != '\n')) return 0;
  return std::atoi(text.c_str() + at + name.size() + 1);
}

std::string SelfPath() {
  char buffer[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "/proc/self/exe";
}

}  // namespace

Result<std::unique_ptr<ServiceChild>> ServiceChild::Start(const std::vector<std::string>& serve_args, const std::string& dir,
                                                           std::chrono::milliseconds ready_within) {
  const auto deadline = env::RealClock().Steady() + ready_within;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(fmt::format("{}: {}", dir, ec.message()));
  const std::string ports_file = dir + "/ports";
  std::filesystem::remove(ports_file, ec);
  std::unique_ptr<ServiceChild> child(new ServiceChild());
  child->log_ = dir + "/serve.log";
  std::vector<std::string> argv = {SelfPath(), "serve"};
  argv.insert(argv.end(), serve_args.begin(), serve_args.end());
  argv.insert(argv.end(), {"--service.port", "0", "--status.port", "0", "--testing.ports_file", ports_file});
  std::vector<char*> c;
  for (std::string& a : argv) c.push_back(a.data());
  c.push_back(nullptr);
  const int fd = ::open(child->log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError(fmt::format("{}: cannot create", child->log_));
  const pid_t parent = ::getpid();
  child->pid_ = ::fork();
  if (child->pid_ == 0) {  // only async-signal-safe calls from here on
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) _exit(126);  // the parent died before prctl
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::close_range(3, ~0U, 0);
    ::execv(c[0], c.data());
    _exit(127);
  }
  ::close(fd);
  if (child->pid_ < 0) return Status::IoError("fork failed");
  CINCINNATI_RETURN_IF_ERROR(child->WaitForPorts(deadline, ports_file));
  while (env::RealClock().Steady() < deadline && child->Running()) {
    auto ready = http::Get(child->status_url_ + "/readiness", {.timeout = std::chrono::seconds(5), .accept_gzip = false});
    if (ready.status == 200) return child;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status::Internal(fmt::format("the service did not become ready within {} ms; {}:\n{}", ready_within.count(),
                                      child->log_, child->LogTail()));
}

Status ServiceChild::WaitForPorts(std::chrono::steady_clock::time_point deadline, const std::string& ports_file) {
  while (env::RealClock().Steady() < deadline) {
    if (!Running()) return Status::Internal(fmt::format("the service exited at start; {}:\n{}", log_, LogTail()));
    const std::string text = ReadAll(ports_file);
    const int main = PortIn(text, "main"), status = PortIn(text, "status");
    if (main > 0 && status > 0) {
      base_url_ = fmt::format("http://127.0.0.1:{}/api/upgrades_info", main);
      status_url_ = fmt::format("http://127.0.0.1:{}", status);
      return Status::OK();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Status::Internal(fmt::format("the service wrote no ports in time; {}:\n{}", log_, LogTail()));
}

ServiceChild::~ServiceChild() { Stop(); }

bool ServiceChild::Running() {
  if (pid_ > 0 && ::waitpid(pid_, &exit_status_, WNOHANG) == pid_) pid_ = -1;
  return pid_ > 0;
}

int ServiceChild::Stop() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    const auto deadline = env::RealClock().Steady() + std::chrono::seconds(15);
    while (Running() && env::RealClock().Steady() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &exit_status_, 0);
      pid_ = -1;
      return -1;
    }
  }
  return WIFEXITED(exit_status_) ? WEXITSTATUS(exit_status_) : -1;
}

std::string ServiceChild::LogTail(size_t max_bytes) const {
  const std::string text = ReadAll(log_);
  return text.size() <= max_bytes ? text : "..." + text.substr(text.size() - max_bytes);
}

}  // namespace cincinnati::fleet
