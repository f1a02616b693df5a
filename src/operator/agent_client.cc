#include "operator/agent_client.h"

#include <fmt/format.h>

#include "config_api/cluster_version.h"
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

bool HttpUpdateAgent::Watch(int64_t seen, std::chrono::seconds timeout, std::function<void(bool changed)> done) {
  if (!endpoint_.watches || seen < 0) return false;
  http::LongPolls::Poll poll;
  poll.url = fmt::format("{}{}?watch=true&resourceVersion={}&timeoutSeconds={}", endpoint_.url, kClusterVersion, seen, timeout.count());
  poll.ca_path = endpoint_.ca_path;
  poll.timeout = timeout + std::chrono::seconds(10);  // the agent answers at `timeout`
  if (!endpoint_.token_file.empty()) {
    auto token = kube::ReadTokenFile(endpoint_.token_file, "the token file");
    if (!token.ok()) return false;
    poll.headers.push_back("Authorization: Bearer " + *token);
  }
  endpoint_.watches->Start(std::move(poll), [seen, done = std::move(done)](http::Result got) {
    bool changed = false;
    if (got.ok() && !got.body.empty()) {
      auto event = kube::ParseJson(got.body, size_t{16} << 20);
      const JsonValue* object = event.ok() && event->is_object() && FindMember(*event, "type") ? FindMember(*event, "object") : nullptr;
      if (object && object->is_object()) {
        auto cv = config_api::FromJson(*object, config_api::ReadAs::kPeer);
        changed = cv.ok() && cv->resource_version != seen;
      }
    }
    done(changed);
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
