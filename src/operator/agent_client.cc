#include "operator/agent_client.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "config_api/cluster_version.h"
#include "env/clock.h"
#include "kube/api_access.h"
#include "kube/json_value.h"
#include "operator/http_call.h"

namespace cincinnati::upgrade {
namespace {

using kube::JsonValue;
using kube::JsonObject;
using kube::FindMember;
using kube::TextOf;
using kube::IntegerOf;
using kube::ItemsOf;

constexpr std::string_view kClusterVersion = "/apis/config.openshift.io/v1/clusterversions/version";
constexpr std::string_view kOperators = "/apis/config.openshift.io/v1/clusteroperators";

// Reads optional string members, naming the path of a member of the wrong type.
Status Str(const JsonValue& object, std::string_view key, const std::string& path, std::string& out) {
  const JsonValue* v = object.is_object() ? FindMember(object, key) : nullptr;
  if (!v || v->is_null()) return Status::OK();
  if (!v->is_string()) return Status::InvalidArgument(fmt::format("{}.{}: not a string", path, key));
  out = TextOf(*v);
  return Status::OK();
}

Result<const JsonValue*> List(const JsonValue* parent, std::string_view key, const std::string& path) {
  const JsonValue* v = parent && parent->is_object() ? FindMember(*parent, key) : nullptr;
  if (!v || v->is_null()) return static_cast<const JsonValue*>(nullptr);
  if (!v->is_array()) return Status::InvalidArgument(fmt::format("{}.{}: not a list", path, key));
  return v;
}

// The {status, reason, message} of the condition `type` in a conditions list.
Result<AgentCondition> Condition(const JsonValue* conditions, std::string_view type, const std::string& path) {
  AgentCondition out;
  if (!conditions) return out;
  for (size_t i = 0; i < ItemsOf(*conditions).size(); ++i) {
    const JsonValue& c = ItemsOf(*conditions)[i];
    const std::string at = fmt::format("{}[{}]", path, i);
    if (!c.is_object()) return Status::InvalidArgument(at + ": not an object");
    std::string t;
    CINCINNATI_RETURN_IF_ERROR(Str(c, "type", at, t));
    if (t != type) continue;
    CINCINNATI_RETURN_IF_ERROR(Str(c, "status", at, out.status));
    CINCINNATI_RETURN_IF_ERROR(Str(c, "reason", at, out.reason));
    CINCINNATI_RETURN_IF_ERROR(Str(c, "message", at, out.message));
    break;
  }
  return out;
}

AgentRelease FromRelease(const config_api::Release& r) { return {r.version, r.image}; }

AgentCondition FindCondition(const config_api::ClusterVersion& cv, std::string_view type) {
  for (const config_api::Condition& c : cv.status.conditions) {
    if (c.type == type) return {c.status, c.reason, c.message};
  }
  return {};
}

// What the operator needs of the agent's ClusterVersion, read as a peer's document
// (config_api/cluster_version.h: types checked, unknown fields ignored).
Status ReadClusterVersion(const JsonValue& document, AgentSnapshot& s) {
  if (!document.is_object()) return Status::InvalidArgument("the ClusterVersion is not an object");
  CINCINNATI_ASSIGN_OR_RETURN(config_api::ClusterVersion cv, config_api::FromJson(document, config_api::ReadAs::kPeer));
  s.resource_version = cv.resource_version;
  s.cluster_id = cv.spec.cluster_id;
  s.channel = cv.spec.channel;
  s.upstream = cv.spec.upstream;
  if (cv.spec.desired_update) s.desired_update = {cv.spec.desired_update->version, cv.spec.desired_update->image};
  s.status_desired = FromRelease(cv.status.desired);
  for (const config_api::UpdateHistoryEntry& h : cv.status.history) {
    s.history.push_back({h.state, h.version, h.image, h.started_time, h.completion_time});
  }
  for (const config_api::Release& r : cv.status.available_updates) s.available_updates.push_back(FromRelease(r));
  for (const config_api::ConditionalUpdateStatus& u : cv.status.conditional_updates) {
    s.conditional_updates.push_back(FromRelease(u.release));
  }
  s.upgradeable = FindCondition(cv, "Upgradeable");
  s.failing = FindCondition(cv, "Failing");
  s.progressing = FindCondition(cv, "Progressing");
  return Status::OK();
}

Status ReadOperators(const JsonValue& list, AgentSnapshot& s) {
  CINCINNATI_ASSIGN_OR_RETURN(const JsonValue* items, List(&list, "items", "ClusterOperatorList"));
  if (!items) return Status::OK();
  for (size_t i = 0; i < ItemsOf(*items).size(); ++i) {
    const JsonValue& o = ItemsOf(*items)[i];
    const std::string at = fmt::format("items[{}]", i);
    if (!o.is_object()) return Status::InvalidArgument(at + ": not an object");
    ComponentHealth c;
    if (const JsonValue* metadata = FindMember(o, "metadata")) CINCINNATI_RETURN_IF_ERROR(Str(*metadata, "name", at + ".metadata", c.name));
    const JsonValue* status = FindMember(o, "status");
    CINCINNATI_ASSIGN_OR_RETURN(const JsonValue* conditions, List(status, "conditions", at + ".status"));
    CINCINNATI_ASSIGN_OR_RETURN(AgentCondition available, Condition(conditions, "Available", at + ".status.conditions"));
    CINCINNATI_ASSIGN_OR_RETURN(AgentCondition degraded, Condition(conditions, "Degraded", at + ".status.conditions"));
    c.available = available.status == "True";
    c.degraded = degraded.status == "True";
    const JsonValue* extension = status && status->is_object() ? FindMember(*status, "extension") : nullptr;
    const JsonValue* machines = extension && extension->is_object() ? FindMember(*extension, "machineCount") : nullptr;
    const JsonValue* updated = extension && extension->is_object() ? FindMember(*extension, "updatedMachineCount") : nullptr;
    if (machines && updated) {
      auto m = machines->is_number() ? IntegerOf(*machines) : std::nullopt;
      auto u = updated->is_number() ? IntegerOf(*updated) : std::nullopt;
      if (!m || !u) return Status::InvalidArgument(at + ".status.extension: machineCount and updatedMachineCount must be integers");
      if (!s.worker_pool.found || c.name == "machine-config") s.worker_pool = {true, c.name, *m, *u};
    }
    s.components.push_back(std::move(c));
  }
  return Status::OK();
}

}  // namespace

Result<AgentSnapshot> ReadAgentSnapshot(std::string_view cluster_version_json, std::string_view operators_json) {
  AgentSnapshot s;
  auto cv = kube::ParseJson(cluster_version_json);
  if (!cv.ok()) return cv.status().WithContext("the ClusterVersion");
  CINCINNATI_RETURN_IF_ERROR(ReadClusterVersion(*cv, s).WithContext("the ClusterVersion"));
  auto operators = kube::ParseJson(operators_json);
  if (!operators.ok()) return operators.status().WithContext("the ClusterOperatorList");
  if (!operators->is_object()) return Status::InvalidArgument("the ClusterOperatorList is not an object");
  CINCINNATI_RETURN_IF_ERROR(ReadOperators(*operators, s).WithContext("the ClusterOperatorList"));
  return s;
}

namespace {

Result<std::string> Call(const AgentEndpoint& e, const std::string& method, std::string_view path, const std::string& body = "") {
  return CallPeer({e.token_file, e.ca_path, e.timeout, {}}, method, e.url + std::string(path), body, "application/merge-patch+json");
}

}  // namespace

Result<AgentSnapshot> HttpUpdateAgent::Snapshot() {
  CINCINNATI_ASSIGN_OR_RETURN(std::string cv, Call(endpoint_, "GET", kClusterVersion));
  CINCINNATI_ASSIGN_OR_RETURN(std::string operators, Call(endpoint_, "GET", kOperators));
  auto snapshot = ReadAgentSnapshot(cv, operators);
  if (!snapshot.ok()) return snapshot.status().WithContext(endpoint_.url);
  return snapshot;
}

namespace {

// The watch's answer, read: the resourceVersion of the object in an event, or of the
// plain object an agent without watches answers (nullopt: no object, an empty answer at
// the watch's deadline included).
std::optional<int64_t> AnsweredVersion(const std::string& body) {
  if (body.empty()) return std::nullopt;
  auto answer = kube::ParseJson(body, size_t{16} << 20);
  if (!answer.ok() || !answer->is_object()) return std::nullopt;
  const JsonValue* object = FindMember(*answer, "type") ? FindMember(*answer, "object") : &*answer;
  if (!object || !object->is_object()) return std::nullopt;
  auto cv = config_api::FromJson(*object, config_api::ReadAs::kPeer);
  if (!cv.ok()) return std::nullopt;
  return cv->resource_version;
}

// A connection that failed or an agent that answers 5xx (restarting, or behind a proxy
// while it restarts): the watch is tried again. Other answers end it.
bool Broken(const http::Result& got) {
  if (!got.error.empty()) return got.error_kind != http::ErrorKind::kCancelled;
  return got.status >= 500;
}

}  // namespace

struct HttpUpdateAgent::WatchAttempt {
  AgentEndpoint endpoint;
  int64_t seen = 0;
  std::chrono::steady_clock::time_point deadline;
  std::chrono::milliseconds backoff{0};  // before the next try after a break
  int breaks = 0;
  std::function<void(bool changed)> done;
};

bool HttpUpdateAgent::Watch(int64_t seen, std::chrono::seconds timeout, std::function<void(bool changed)> done) {
  if (!endpoint_.watches || seen < 0) return false;
  auto attempt = std::make_shared<WatchAttempt>();
  attempt->endpoint = endpoint_;
  attempt->seen = seen;
  attempt->deadline = env::RealClock().Steady() + timeout;
  attempt->done = std::move(done);
  return Try(std::move(attempt), std::chrono::milliseconds(0));
}

bool HttpUpdateAgent::Try(std::shared_ptr<WatchAttempt> attempt, std::chrono::milliseconds delay) {
  const AgentEndpoint& e = attempt->endpoint;
  const auto left = std::chrono::ceil<std::chrono::seconds>(attempt->deadline - env::RealClock().Steady() - delay);
  const auto timeout = std::clamp(left, std::chrono::seconds(1), std::chrono::seconds(300));
  http::LongPolls::Poll poll;
  poll.url = fmt::format("{}{}?watch=true&resourceVersion={}&timeoutSeconds={}", e.url, kClusterVersion, attempt->seen, timeout.count());
  poll.ca_path = e.ca_path;
  poll.timeout = timeout + std::chrono::seconds(10);  // the agent answers at `timeout`
  poll.delay = delay;
  if (!e.token_file.empty()) {
    auto token = kube::ReadTokenFile(e.token_file, "the token file");
    if (!token.ok()) return false;
    poll.headers.push_back("Authorization: Bearer " + *token);
  }
  e.watches->Start(std::move(poll), [attempt](http::Result got) {
    if (!Broken(got)) {
      if (attempt->breaks > 0) spdlog::info("the watch of {} is back after {} break(s)", attempt->endpoint.url, attempt->breaks);
      // A reconnected watch answers at once when the object moved during the break.
      const std::optional<int64_t> version = got.ok() ? AnsweredVersion(got.body) : std::nullopt;
      attempt->done(version && *version != attempt->seen);
      return;
    }
    ++attempt->breaks;
    const auto delay = attempt->backoff;
    attempt->backoff = std::min(attempt->backoff.count() == 0 ? kFirstBackoff : attempt->backoff * 2, kLongestBackoff);
    const bool in_time = env::RealClock().Steady() + delay < attempt->deadline;
    const std::string why = got.error.empty() ? fmt::format("HTTP {}", got.status) : got.error;
    if (attempt->breaks == 1) {
      spdlog::info("the watch of {} broke ({}){}", attempt->endpoint.url, why, in_time ? ": watching again at once, then backing off" : "");
    } else {
      spdlog::debug("the watch of {} broke again ({})", attempt->endpoint.url, why);
    }
    if (!in_time || !Try(attempt, delay)) attempt->done(false);
  });
  return true;
}

Status HttpUpdateAgent::SetChannel(const std::string& channel) {
  JsonValue patch = JsonObject({{"spec", JsonValue(JsonObject({{"channel", JsonValue(channel)}}))}});
  return Call(endpoint_, "PATCH", kClusterVersion, kube::WriteJson(patch)).status();
}

Status HttpUpdateAgent::SetDesiredUpdate(const std::string& version, const std::string& image) {
  auto text = [](const std::string& v) { return v.empty() ? JsonValue() : JsonValue(v); };
  JsonValue desired = JsonObject({{"version", text(version)}, {"image", text(image)}});
  JsonValue patch = JsonObject({{"spec", JsonValue(JsonObject({{"desiredUpdate", std::move(desired)}}))}});
  return Call(endpoint_, "PATCH", kClusterVersion, kube::WriteJson(patch)).status();
}

}  // namespace cincinnati::upgrade
