// A real `cincinnati` service process for integration tests: started on ephemeral
// 127.0.0.1 ports, its ports read from --testing.ports_file, stopped with SIGTERM.
// Every wait is bounded.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "server/http_client.h"
#include "test_util.h"

namespace cincinnati::testing {

class ServiceProcess {
 public:
  // `args` follow the subcommand; ports and the ports file are added.
  ServiceProcess(const std::string& subcommand, std::vector<std::string> args) {
    log_ = dir_ / "service.log";
    std::string ports_file = (dir_ / "ports").string();
    std::vector<std::string> argv = {CINCINNATI_BINARY, subcommand, "-v"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto has = [&](const std::string& flag) { return std::find(args.begin(), args.end(), flag) != args.end(); };
    if (!has("--service.port")) argv.insert(argv.end(), {"--service.port", "0"});
    if (!has("--status.port")) argv.insert(argv.end(), {"--status.port", "0"});
    if (subcommand == "graph-builder" && !has("--service.public_port")) {
      argv.insert(argv.end(), {"--service.public_port", "0"});
    }
    argv.insert(argv.end(), {"--testing.ports_file", ports_file});
    std::vector<char*> c;
    for (auto& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_ = fork();
    if (pid_ == 0) {  // only async-signal-safe calls from here on
      ::dup2(fd, 2);
      execv(c[0], c.data());
      _exit(127);
    }
    ::close(fd);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline) {
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
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        exit_status_ = status;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~ServiceProcess() { Stop(); }

  bool running() const { return pid_ > 0; }
  int port(const std::string& name) const { return ports_.count(name) ? ports_.at(name) : 0; }
  std::string url(const std::string& path, const std::string& listener = "main") const {
    return "http://127.0.0.1:" + std::to_string(port(listener)) + path;
  }
  std::string log() const { return ReadFile(log_); }

  // Sends SIGTERM and returns the exit code (-1 if it had to be killed).
  int Stop() {
    if (pid_ <= 0) return WIFEXITED(exit_status_) ? WEXITSTATUS(exit_status_) : -1;
    kill(pid_, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        exit_status_ = status;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return -1;
  }

 private:
  TempDir dir_;
  std::filesystem::path log_;
  pid_t pid_ = -1;
  int exit_status_ = 0;
  std::map<std::string, int> ports_;
};

inline server::HttpResult Get(const std::string& url, std::vector<std::string> headers = {}) {
  return server::HttpGet(url, {.headers = std::move(headers), .timeout = std::chrono::seconds(10), .accept_gzip = false});
}

// Polls `fn` every 50 ms until it returns true or `limit` passes.
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
