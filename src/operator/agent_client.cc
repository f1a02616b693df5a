#include "operator/agent_client.h"

#include <fmt/format.h>

#include "kube/json_value.h"
#include "operator/http_call.h"

namespace cincinnati::upgrade {
namespace {

using kube::JsonValue;

constexpr std::string_view kClusterVersion = "/apis/config.openshift.io/v1/clusterversions/version";
constexpr std::string_view kOperators = "/apis/config.openshift.io/v1/clusteroperators";

// Reads optional string members, naming the path of a member of the wrong type.
Status Str(const JsonValue& object, std::string_view key, const std::string& path, std::string& out) {
  const JsonValue* v = object.is_object() ? object.Find(key) : nullptr;
  if (!v || v->is_null()) return Status::OK();
  if (!v->is_string()) return Status::InvalidArgument(fmt::format("{}.{}: not a string", path, key));
  out = v->text();
  return Status::OK();
}

Result<const JsonValue*> List(const JsonValue* parent, std::string_view key, const std::string& path) {
  const JsonValue* v = parent && parent->is_object() ? parent->Find(key) : nullptr;
  if (!v || v->is_null()) return static_cast<const JsonValue*>(nullptr);
  if (!v->is_array()) return Status::InvalidArgument(fmt::format("{}.{}: not a list", path, key));
  return v;
}

Status Release(const JsonValue* object, const std::string& path, AgentRelease& out) {
  if (!object || object->is_null()) return Status::OK();
  if (!object->is_object()) return Status::InvalidArgument(path + ": not an object");
  CINCINNATI_RETURN_IF_ERROR(Str(*object, "version", path, out.version));
  return Str(*object, "image", path, out.image);
}

// The {status, reason, message} of the condition `type` in a conditions list.
Result<AgentCondition> Condition(const JsonValue* conditions, std::string_view type, const std::string& path) {
  AgentCondition out;
  if (!conditions) return out;
  for (size_t i = 0; i < conditions->items().size(); ++i) {
    const JsonValue& c = conditions->items()[i];
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

Status ReadClusterVersion(const JsonValue& cv, AgentSnapshot& s) {
  if (!cv.is_object()) return Status::InvalidArgument("the ClusterVersion is not an object");
  const JsonValue* spec = cv.Find("spec");
  if (spec && !spec->is_null()) {
    if (!spec->is_object()) return Status::InvalidArgument("spec: not an object");
    CINCINNATI_RETURN_IF_ERROR(Str(*spec, "clusterID", "spec", s.cluster_id));
    CINCINNATI_RETURN_IF_ERROR(Str(*spec, "channel", "spec", s.channel));
    CINCINNATI_RETURN_IF_ERROR(Str(*spec, "upstream", "spec", s.upstream));
    CINCINNATI_RETURN_IF_ERROR(Release(spec->Find("desiredUpdate"), "spec.desiredUpdate", s.desired_update));
  }
  const JsonValue* status = cv.Find("status");
  if (!status || status->is_null()) return Status::OK();
  if (!status->is_object()) return Status::InvalidArgument("status: not an object");
  CINCINNATI_RETURN_IF_ERROR(Release(status->Find("desired"), "status.desired", s.status_desired));
  CINCINNATI_ASSIGN_OR_RETURN(const JsonValue* history, List(status, "history", "status"));
  if (history) {
    for (size_t i = 0; i < history->items().size(); ++i) {
      const JsonValue& h = history->items()[i];
      const std::string at = fmt::format("status.history[{}]", i);
      if (!h.is_object()) return Status::InvalidArgument(at + ": not an object");
      AgentHistoryEntry e;
      CINCINNATI_RETURN_IF_ERROR(Str(h, "state", at, e.state));
      CINCINNATI_RETURN_IF_ERROR(Str(h, "version", at, e.version));
      CINCINNATI_RETURN_IF_ERROR(Str(h, "image", at, e.image));
      CINCINNATI_RETURN_IF_ERROR(Str(h, "startedTime", at, e.started_time));
      CINCINNATI_RETURN_IF_ERROR(Str(h, "completionTime", at, e.completion_time));
      s.history.push_back(std::move(e));
    }
  }
  CINCINNATI_ASSIGN_OR_RETURN(const JsonValue* available, List(status, "availableUpdates", "status"));
  if (available) {
    for (size_t i = 0; i < available->items().size(); ++i) {
      AgentRelease r;
      CINCINNATI_RETURN_IF_ERROR(Release(&available->items()[i], fmt::format("status.availableUpdates[{}]", i), r));
      s.available_updates.push_back(std::move(r));
    }
  }
  CINCINNATI_ASSIGN_OR_RETURN(const JsonValue* conditional, List(status, "conditionalUpdates", "status"));
  if (conditional) {
    for (size_t i = 0; i < conditional->items().size(); ++i) {
      const JsonValue& u = conditional->items()[i];
      const std::string at = fmt::format("status.conditionalUpdates[{}]", i);
      if (!u.is_object()) return Status::InvalidArgument(at + ": not an object");
      AgentRelease r;
      CINCINNATI_RETURN_IF_ERROR(Release(u.Find("release"), at + ".release", r));
      s.conditional_updates.push_back(std::move(r));
    }
  }
  CINCINNATI_ASSIGN_OR_RETURN(const JsonValue* conditions, List(status, "conditions", "status"));
  CINCINNATI_ASSIGN_OR_RETURN(s.upgradeable, Condition(conditions, "Upgradeable", "status.conditions"));
  CINCINNATI_ASSIGN_OR_RETURN(s.failing, Condition(conditions, "Failing", "status.conditions"));
  CINCINNATI_ASSIGN_OR_RETURN(s.progressing, Condition(conditions, "Progressing", "status.conditions"));
  return Status::OK();
}

Status ReadOperators(const JsonValue& list, AgentSnapshot& s) {
  CINCINNATI_ASSIGN_OR_RETURN(const JsonValue* items, List(&list, "items", "ClusterOperatorList"));
  if (!items) return Status::OK();
  for (size_t i = 0; i < items->items().size(); ++i) {
    const JsonValue& o = items->items()[i];
    const std::string at = fmt::format("items[{}]", i);
    if (!o.is_object()) return Status::InvalidArgument(at + ": not an object");
    ComponentHealth c;
    if (const JsonValue* metadata = o.Find("metadata")) CINCINNATI_RETURN_IF_ERROR(Str(*metadata, "name", at + ".metadata", c.name));
    const JsonValue* status = o.Find("status");
    CINCINNATI_ASSIGN_OR_RETURN(const JsonValue* conditions, List(status, "conditions", at + ".status"));
    CINCINNATI_ASSIGN_OR_RETURN(AgentCondition available, Condition(conditions, "Available", at + ".status.conditions"));
    CINCINNATI_ASSIGN_OR_RETURN(AgentCondition degraded, Condition(conditions, "Degraded", at + ".status.conditions"));
    c.available = available.status == "True";
    c.degraded = degraded.status == "True";
    const JsonValue* extension = status && status->is_object() ? status->Find("extension") : nullptr;
    const JsonValue* machines = extension && extension->is_object() ? extension->Find("machineCount") : nullptr;
    const JsonValue* updated = extension && extension->is_object() ? extension->Find("updatedMachineCount") : nullptr;
    if (machines && updated) {
      auto m = machines->is_number() ? machines->integer() : std::nullopt;
      auto u = updated->is_number() ? updated->integer() : std::nullopt;
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

Status HttpUpdateAgent::SetChannel(const std::string& channel) {
  JsonValue patch = JsonValue::Object({{"spec", JsonValue::Object({{"channel", JsonValue::String(channel)}})}});
  return Call(endpoint_, "PATCH", kClusterVersion, kube::WriteJson(patch)).status();
}

Status HttpUpdateAgent::SetDesiredUpdate(const std::string& version, const std::string& image) {
  auto text = [](const std::string& v) { return v.empty() ? JsonValue() : JsonValue::String(v); };
  JsonValue desired = JsonValue::Object({{"version", text(version)}, {"image", text(image)}});
  JsonValue patch = JsonValue::Object({{"spec", JsonValue::Object({{"desiredUpdate", std::move(desired)}})}});
  return Call(endpoint_, "PATCH", kClusterVersion, kube::WriteJson(patch)).status();
}

}  // namespace cincinnati::upgrade
