#include "fleet/service_child.h"

#include <signal.h>

#include <fmt/format.h>

#include <thread>

#include "env/clock.h"
#include "env/file_system.h"
#include "env/process.h"
#include "http/client.h"

namespace cincinnati::fleet {
namespace {

// Whole, whatever the size (the log's tail is wanted); what cannot be read reads as empty.
std::string ReadAll(const std::string& path) {
  auto text = env::ReadFile(path, size_t{1} << 40);
  return text.ok() ? std::move(text).value() : std::string();
}

int PortIn(const std::string& text, const std::string& name) {
  const size_t at = text.find(name + "=");
  if (at == std::string::npos || (at > 0 && text[at - 1] != '\n')) return 0;
  return std::atoi(text.c_str() + at + name.size() + 1);
}

}  // namespace

Result<std::unique_ptr<ServiceChild>> ServiceChild::Start(const std::vector<std::string>& serve_args, const std::string& dir,
                                                           std::chrono::milliseconds ready_within) {
  const auto deadline = env::RealClock().Steady() + ready_within;
  env::FileSystem& fs = env::DefaultFileSystem();
  CINCINNATI_RETURN_IF_ERROR(fs.CreateDirectories(dir));
  const std::string ports_file = dir + "/ports";
  // A previous run's ports file left in place would be read as this child's ports.
  CINCINNATI_RETURN_IF_ERROR(fs.RemoveFile(ports_file).WithContext("removing the previous run's ports file"));
  std::unique_ptr<ServiceChild> child(new ServiceChild());
  child->log_ = dir + "/serve.log";
  env::SpawnOptions options;
  options.argv = {env::SelfExecutablePath(), "serve"};
  options.argv.insert(options.argv.end(), serve_args.begin(), serve_args.end());
  options.argv.insert(options.argv.end(), {"--service.port", "0", "--status.port", "0", "--testing.ports_file", ports_file});
  options.stdout_to = options.stderr_to = env::Redirect::File(child->log_);
  options.die_with_parent = true;
  auto spawned = env::Process::Spawn(options);
  if (!spawned.ok()) return Status::IoError(fmt::format("{}: cannot start the service: {}", child->log_, spawned.status().message()));
  child->process_ = std::move(spawned).value();
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

bool ServiceChild::Running() { return process_ && !process_->Poll(); }

int ServiceChild::Stop() {
  if (!process_) return 0;
  if (!process_->reaped()) {
    process_->Signal(SIGTERM);
    if (!process_->WaitFor(std::chrono::seconds(15))) {
      process_->Signal(SIGKILL);
      process_->Wait();
      return -1;
    }
  }
  const env::ExitStatus status = *process_->Poll();
  return status.exited ? status.code : -1;
}

std::string ServiceChild::LogTail(size_t max_bytes) const {
  const std::string text = ReadAll(log_);
  return text.size() <= max_bytes ? text : "..." + text.substr(text.size() - max_bytes);
}

}  // namespace cincinnati::fleet
