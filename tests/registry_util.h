// A real Debian `docker-registry` on an ephemeral 127.0.0.1 port, storing into a
// temporary directory, for integration tests.
#pragma once

#include <string>

#include "service_util.h"

namespace cincinnati::testing {

class LocalRegistry {
 public:
  LocalRegistry() : port_(FreePort()) {
    WriteFile(dir_ / "config.yml",
              "version: 0.1\nlog: {level: error}\nstorage:\n  filesystem: {rootdirectory: " + (dir_ / "data").string() +
                  "}\n  delete: {enabled: true}\nhttp:\n  addr: 127.0.0.1:" + std::to_string(port_) + "\n");
    process_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{"/usr/bin/docker-registry", "serve", (dir_ / "config.yml").string()});
    ready_ = WaitFor([this] { return http::Get(url() + "/v2/").status == 200; }, std::chrono::seconds(20));
  }

  bool ready() const { return ready_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const { return process_->log(); }
  std::filesystem::path storage() const { return dir_ / "data"; }
  void Stop() { process_->Stop(); }

 private:
  TempDir dir_;
  int port_;
  std::unique_ptr<ChildProcess> process_;
  bool ready_ = false;
};

// Runs the cincinnati binary; returns its exit code, with stdout and stderr captured.
struct CommandResult {
  int exit_code;
  std::string out, err;
};

inline CommandResult RunCincinnati(const std::string& args) {
  TempDir tmp;
  std::string cmd = std::string(CINCINNATI_BINARY) + " " + args + " >" + (tmp / "out").string() + " 2>" +
                    (tmp / "err").string() + " </dev/null";
  int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(tmp / "out"), ReadFile(tmp / "err")};
}

}  // namespace cincinnati::testing
