// A real `cincinnati` service process for integration tests: started on ephemeral
// 127.0.0.1 ports, its ports read from --testing.ports_file, stopped with SIGTERM.
// Every wait is bounded.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "http/client.h"
#include "test_util.h"

namespace cincinnati::testing {

// A child process with its stderr (and stdout) in a log file; stopped with SIGTERM,
// then SIGKILL after 15 s.
class ChildProcess {
 public:
  explicit ChildProcess(std::vector<std::string> argv) {
    log_ = dir_ / "process.log";
    std::vector<char*> c;
    for (auto& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_ = fork();
    if (pid_ == 0) {  // only async-signal-safe calls from here on
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      // Nothing else of the test's (listening sockets of test servers above all) may
      // live on in the child, or a server the test stops would keep accepting.
      ::close_range(3, ~0U, 0);
      execv(c[0], c.data());
      _exit(127);
    }
    ::close(fd);
  }
  ~ChildProcess() { Stop(); }

  // False once the process has exited.
  bool running() {
    if (pid_ > 0 && waitpid(pid_, &exit_status_, WNOHANG) == pid_) pid_ = -1;
    return pid_ > 0;
  }
  std::string log() const { return ReadFile(log_); }
  const TempDir& dir() const { return dir_; }
  pid_t pid() const { return pid_; }  // -1 once it has exited

  // SIGKILL, as a crash or an OOM kill would end it.
  void Kill() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &exit_status_, 0);
      pid_ = -1;
    }
  }

  // Sends SIGTERM and returns the exit code (-1 if it had to be killed or crashed).
  int Stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
      while (running() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &exit_status_, 0);
        pid_ = -1;
        return -1;
      }
    }
    return WIFEXITED(exit_status_) ? WEXITSTATUS(exit_status_) : -1;
  }

 private:
  TempDir dir_;
  std::filesystem::path log_;
  pid_t pid_ = -1;
  int exit_status_ = 0;
};

// A `cincinnati` service on ephemeral 127.0.0.1 ports, read from --testing.ports_file.
class ServiceProcess {
 public:
  // `args` follow the subcommand; ports and the ports file are added.
  ServiceProcess(const std::string& subcommand, std::vector<std::string> args)
      : process_(Argv(subcommand, args, ports_dir_ / "ports")) {
    std::string ports_file = (ports_dir_ / "ports").string();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    // The file is read once more after the process has exited: one that hands over to a
    // successor at once (the agent) may be gone before the first look.
    for (bool alive = true; std::chrono::steady_clock::now() < deadline;) {
      alive = process_.running();
      std::string text = ReadFile(ports_file);
      if (text.find("status=") != std::string::npos) {
        size_t pos = 0;
        while (pos < text.size()) {
          size_t nl = text.find('\n', pos);
          std::string line = text.substr(pos, nl - pos);
          size_t eq = line.find('=');
          if (eq != std::string::npos) ports_[line.substr(0, eq)] = std::stoi(line.substr(eq + 1));
          pos = nl == std::string::npos ? text.size() : nl + 1;
        }
        return;
      }
      if (!alive) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  bool running() { return process_.running() && !ports_.empty(); }
  int port(const std::string& name) const { return ports_.count(name) ? ports_.at(name) : 0; }
  std::string url(const std::string& path, const std::string& listener = "main") const {
    return "http://127.0.0.1:" + std::to_string(port(listener)) + path;
  }
  std::string log() const { return process_.log(); }
  pid_t pid() const { return process_.pid(); }
  int Stop() { return process_.Stop(); }
  void Kill() { process_.Kill(); }

 private:
  static std::vector<std::string> Argv(const std::string& subcommand, const std::vector<std::string>& args,
                                       const std::filesystem::path& ports_file) {
    std::vector<std::string> argv = {CINCINNATI_BINARY, subcommand, "-v"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto has = [&](const std::string& flag) { return std::find(args.begin(), args.end(), flag) != args.end(); };
    const bool service = subcommand != "agent" && subcommand != "upgrade-operator";  // these have one API port
    if (service && !has("--service.port")) argv.insert(argv.end(), {"--service.port", "0"});
    if (service && !has("--status.port")) argv.insert(argv.end(), {"--status.port", "0"});
    if (subcommand == "graph-builder" && !has("--service.public_port")) {
      argv.insert(argv.end(), {"--service.public_port", "0"});
    }
    argv.insert(argv.end(), {"--testing.ports_file", ports_file.string()});
    return argv;
  }

  TempDir ports_dir_;
  ChildProcess process_;
  std::map<std::string, int> ports_;
};

// A free TCP port on 127.0.0.1 for a program that cannot be told to pick one.
inline int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

inline http::Result Get(const std::string& url, std::vector<std::string> headers = {}) {
  return http::Get(url, {.headers = std::move(headers), .timeout = std::chrono::seconds(10), .accept_gzip = false});
}

// Polls `fn` every 50 ms until it returns true or `limit` passes.
// A series' value in Prometheus text exposition, labels included as rendered (e.g.
// `x_total{code="400"}`), or -1 when the series is absent.
inline double MetricValue(const std::string& text, const std::string& series) {
  const std::string line = series + " ";
  size_t at = text.rfind(line, 0) == 0 ? 0 : text.find("\n" + line);
  if (at == std::string::npos) return -1;
  if (text[at] == '\n') ++at;
  return std::stod(text.substr(at + line.size()));
}

// The same, scraped from a service's /metrics.
inline double MetricValue(const ServiceProcess& service, const std::string& series) {
  return MetricValue(Get(service.url("/metrics", "status")).body, series);
}

// How many times `needle` occurs in `haystack` (a log line that must appear once).
inline size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

template <typename Fn>
bool WaitFor(Fn fn, std::chrono::milliseconds limit = std::chrono::seconds(15)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (fn()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return fn();
}

}  // namespace cincinnati::testing
