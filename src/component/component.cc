#include "component/component.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <thread>

#include "agent/component_objects.h"
#include "env/process.h"
#include "graph-data/time_format.h"
#include "http/client.h"

namespace cincinnati::component {

using agent::kDesiredVersionAnnotation;

using kube::ParseJson;
using kube::WriteJson;
using kube::JsonObject;
using kube::JsonArray;
using kube::FindMember;
using kube::TextOf;
using kube::SetMember;
using kube::ItemsOf;
namespace {

JsonValue Cond(const std::string& now, const char* type, const char* status, std::string reason, std::string message) {
  return JsonValue(JsonObject({{"type", JsonValue(type)},
                               {"status", JsonValue(status)},
                               {"lastTransitionTime", JsonValue(now)},
                               {"reason", JsonValue(std::move(reason))},
                               {"message", JsonValue(std::move(message))}}));
}

// status.conditions for Available / Progressing / Degraded, and the operator version.
JsonValue StatusOf(const env::Clock& clock, const std::string& version, bool progressing, bool degraded,
                   const std::string& message) {
  const std::string now = graphdata::FormatDateTime(env::UnixSeconds(clock));
  JsonValue status = JsonValue(JsonObject(
      {{"conditions",
        JsonValue(JsonArray({Cond(now, "Available", "True", "AsExpected", ""),
                             Cond(now, "Progressing", progressing ? "True" : "False", progressing ? "RollingOut" : "AsExpected",
                                  progressing ? message : ""),
                             Cond(now, "Degraded", degraded ? "True" : "False", degraded ? "RolloutFailed" : "AsExpected",
                                  degraded ? message : "")}))}}));
  if (!version.empty()) {
    SetMember(status, "versions", JsonValue(JsonArray({JsonValue(JsonObject(
                               {{"name", JsonValue("operator")}, {"version", JsonValue(version)}}))})));
  }
  return status;
}

std::string Text(const JsonValue& object, std::initializer_list<std::string_view> path) {
  const JsonValue* v = &object;
  for (std::string_view key : path) {
    v = FindMember(*v, key);
    if (!v) return "";
  }
  return v->is_string() ? TextOf(*v) : "";
}

std::string ReportedVersion(const JsonValue& object) {
  const JsonValue* status = FindMember(object, "status");
  const JsonValue* versions = status ? FindMember(*status, "versions") : nullptr;
  if (!versions || !versions->is_array()) return "";
  for (const auto& v : ItemsOf(*versions)) {
    if (Text(v, {"name"}) == "operator") return Text(v, {"version"});
  }
  return "";
}

bool SleepFor(const env::Clock& clock, std::chrono::milliseconds d, std::stop_token stop) {
  auto end = clock.Steady() + d;
  while (clock.Steady() < end) {
    if (stop.stop_requested()) return false;
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(std::chrono::milliseconds(50), d));
  }
  return true;
}

}  // namespace

std::string Component::Url() const {
  return options_.agent_url + "/apis/config.openshift.io/v1/clusteroperators/" + options_.name;
}

Result<JsonValue> Component::Fetch() {
  http::RequestOptions request;
  request.timeout = std::chrono::seconds(10);
  if (!options_.token.empty()) request.headers.push_back("Authorization: Bearer " + options_.token);
  http::Result r = http::Request(Url(), request);
  if (r.status == 404) {
    // Not there yet: the component of the running release introduces itself.
    request.method = "PUT";
    JsonValue object = JsonObject({{"metadata", JsonValue(JsonObject({{"name", JsonValue(options_.name)}}))},
                                   {"status", StatusOf(*options_.clock, options_.initial_version, false, false, "")}});
    request.body = WriteJson(object);
    r = http::Request(Url(), request);
  }
  if (!r.ok()) return Status::IoError(fmt::format("{}: {}", Url(), r.error.empty() ? std::to_string(r.status) : r.error));
  return ParseJson(r.body);
}

Status Component::PatchStatus(const JsonValue& status) {
  http::RequestOptions request;
  request.method = "PATCH";
  request.timeout = std::chrono::seconds(10);
  request.headers = {"Content-Type: application/merge-patch+json"};
  if (!options_.token.empty()) request.headers.push_back("Authorization: Bearer " + options_.token);
  request.body = WriteJson(JsonValue(JsonObject({{"status", status}})));
  http::Result r = http::Request(Url() + "/status", request);
  if (!r.ok()) return Status::IoError(fmt::format("{}/status: {}", Url(), r.error.empty() ? r.body : r.error));
  return Status::OK();
}

Status Component::RollOut(const JsonValue& object, const std::string& version, std::stop_token stop) {
  const std::string current = ReportedVersion(object);
  if (version == started_) {
    spdlog::info("{}: reporting the rollout of {} again (the agent did not hear of it)", options_.name, version);
  } else {
    spdlog::info("{}: rolling out {} (from {})", options_.name, version, current.empty() ? "nothing" : current);
    started_ = version;
  }
  CINCINNATI_RETURN_IF_ERROR(PatchStatus(StatusOf(*options_.clock, current, true, false, "Rolling out " + version)));
  if (options_.fail) {
    return PatchStatus(StatusOf(*options_.clock, current, false, true, fmt::format("Rolling out {} failed (told to fail)", version)));
  }
  if (options_.hang) {
    while (SleepFor(*options_.clock, std::chrono::seconds(1), stop)) {
    }
    return Status::OK();
  }
  const std::string command = Text(object, {"metadata", "annotations", kRolloutCommandAnnotation});
  if (!command.empty()) {
    ::setenv("CINCINNATI_VERSION", version.c_str(), 1);
    // As system(3) would: /bin/sh -c, waited for; not started or ended by a signal is -1.
    int code = -1;
    env::SpawnOptions shell_command;
    shell_command.argv = {"/bin/sh", "-c", command};
    if (auto shell = env::Process::Spawn(shell_command); shell.ok()) {
      const env::ExitStatus exit = (*shell)->Wait();
      if (exit.exited) code = exit.code;
    }
    if (code != 0) {
      return PatchStatus(StatusOf(*options_.clock, current, false, true, fmt::format("Rolling out {}: the rollout command exited {}", version, code)));
    }
  } else {
    double seconds = options_.rollout_seconds;
    if (std::string s = Text(object, {"metadata", "annotations", kRolloutSecondsAnnotation}); !s.empty()) {
      seconds = std::atof(s.c_str());
    }
    const auto total = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    const int machines = std::max(options_.machines, 1);
    for (int done = 0; done < machines; ++done) {
      if (options_.machines > 0) {
        JsonValue status = StatusOf(*options_.clock, current, true, false, fmt::format("Updating machine {} of {}", done + 1, machines));
        SetMember(status, "extension", JsonValue(JsonObject({{"machineCount", JsonValue(int64_t(machines))},
                                                   {"updatedMachineCount", JsonValue(int64_t(done))}})));
        CINCINNATI_RETURN_IF_ERROR(PatchStatus(status));
      }
      if (!SleepFor(*options_.clock, total / machines, stop)) return Status::OK();
    }
  }
  finished_ = version;
  spdlog::info("{}: at {}", options_.name, version);
  return PatchStatus(DoneStatus(version));
}

JsonValue Component::DoneStatus(const std::string& version) const {
  JsonValue status = StatusOf(*options_.clock, version, false, false, "");
  if (options_.machines > 0) {
    SetMember(status, "extension", JsonValue(JsonObject({{"machineCount", JsonValue(int64_t(options_.machines))},
                                               {"updatedMachineCount", JsonValue(int64_t(options_.machines))}})));
  }
  return status;
}

Status Component::Reconcile(std::stop_token stop) {
  CINCINNATI_ASSIGN_OR_RETURN(JsonValue object, Fetch());
  const std::string desired = Text(object, {"metadata", "annotations", kDesiredVersionAnnotation});
  if (desired.empty() || desired == ReportedVersion(object)) return Status::OK();
  if (desired == finished_) return PatchStatus(DoneStatus(desired));  // rolled out; the report was lost
  // Already told to fail this version: do not start again (no version is rolled out twice).
  if (options_.fail && FindMember(object, "status") &&
      WriteJson(*FindMember(object, "status")).find("Rolling out " + desired + " failed") != std::string::npos) {
    return Status::OK();
  }
  return RollOut(object, desired, stop);
}

void Component::Run(std::stop_token stop) {
  std::string last_error;
  while (!stop.stop_requested()) {
    Status s = Reconcile(stop);
    if (!s.ok() && s.message() != last_error) spdlog::warn("{}: {}", options_.name, s.message());
    last_error = s.ok() ? "" : s.message();
    SleepFor(*options_.clock, options_.interval, stop);
  }
}

}  // namespace cincinnati::component
