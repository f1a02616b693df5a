// ServiceChild: the `cincinnati serve` a fleet simulation starts for itself, as a child
// process of the same binary (/proc/self/exe), on ephemeral 127.0.0.1 ports.
//
// Start() runs `<self> serve <args> --service.port 0 --status.port 0
// --testing.ports_file <dir>/ports` with stdout and stderr in <dir>/serve.log, and
// returns once the ports file names both ports and the status listener answers
// /readiness with 200 (a graph is built), or with an error quoting the log's end when
// the child exits or `ready_within` passes first. The child is asked to die with its
// parent (PR_SET_PDEATHSIG), so an interrupted simulation leaves no service behind.
// Stop() sends SIGTERM and waits up to 15 s, then SIGKILL; the destructor stops it too.
// Not thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "env/process.h"

namespace cincinnati::fleet {

class ServiceChild {
 public:
  static Result<std::unique_ptr<ServiceChild>> Start(const std::vector<std::string>& serve_args, const std::string& dir,
                                                     std::chrono::milliseconds ready_within);
  ~ServiceChild();
  ServiceChild(const ServiceChild&) = delete;
  ServiceChild& operator=(const ServiceChild&) = delete;

  // http://127.0.0.1:PORT/api/upgrades_info (serve's prefix)
  const std::string& base_url() const { return base_url_; }
  const std::string& log_path() const { return log_; }
  int Stop();  // the exit code, -1 when it had to be killed or crashed
  bool Running();
  std::string LogTail(size_t max_bytes = 2000) const;

 private:
  ServiceChild() = default;
  Status WaitForPorts(std::chrono::steady_clock::time_point deadline, const std::string& ports_file);

  std::unique_ptr<env::Process> process_;  // none until started
  std::string log_, base_url_, status_url_;
};

}  // namespace cincinnati::fleet
