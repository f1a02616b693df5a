#include "agent/agent_api.h"

#include <unistd.h>

#include <charconv>

#include <fmt/format.h>

#include "core/json_writer.h"
#include "http_server/query.h"
#include "kube/api_access.h"
#include "kube/status_document.h"

namespace cincinnati::agent {

using kube::ParseJson;
using kube::WriteJson;
using kube::JsonObject;
using kube::JsonArray;
using kube::SetMember;
namespace {

constexpr std::string_view kGroupPath = "/apis/config.openshift.io/v1/";
constexpr std::string_view kClusterVersion = "/apis/config.openshift.io/v1/clusterversions/version";
constexpr std::string_view kOperators = "/apis/config.openshift.io/v1/clusteroperators";
// The agent's own resources: what payloads applied, and where the update stands.
constexpr std::string_view kObjects = "/apis/agent.cincinnati.openshift.io/v1/objects";
constexpr std::string_view kUpdateProgress = "/apis/agent.cincinnati.openshift.io/v1/updateprogress";

http_server::Response Json(int code, std::string body) {
  return http_server::Response::Text(code, std::move(body) + "\n", "application/json");
}

http_server::Response Error(int code, std::string_view reason, std::string_view message, std::string_view kind = "",
                       std::string_view name = "", std::string_view field = "", std::string_view cause = "") {
  return Json(code, kube::StatusDocument(code, reason, message, kind, name, field, cause));
}

// "spec.clusterID: Invalid value ..." -> the field before the first ": ".
std::string FieldOf(const std::string& message) {
  size_t colon = message.find(": ");
  std::string field = colon == std::string::npos ? "" : message.substr(0, colon);
  return field.find(' ') == std::string::npos ? field : "";
}

http_server::Response FromStatus(const Status& status, std::string_view kind, std::string_view name) {
  switch (status.code()) {
    case Status::Code::kNotFound:
      return Error(404, "NotFound", status.message(), kind, name);
    case Status::Code::kTooLarge:
      return Error(413, "RequestEntityTooLarge", status.message(), kind, name);
    case Status::Code::kInvalidArgument: {
      std::string field = FieldOf(status.message());
      std::string message = fmt::format("{}.config.openshift.io \"{}\" is invalid: {}", kind, name, status.message());
      std::string cause = field.empty() ? status.message() : status.message().substr(field.size() + 2);
      return Error(422, "Invalid", message, kind, name, field, cause);
    }
    default:
      return Error(500, "InternalError", status.message(), kind, name);
  }
}

bool IsMergePatch(const http_server::Request& request) {
  const std::string* type = request.Header("Content-Type");
  if (!type) return true;  // curl -d without a type: take it as a merge patch
  std::string_view t = *type;
  t = t.substr(0, t.find(';'));
  return t == "application/merge-patch+json" || t == "application/json" || t == "application/x-www-form-urlencoded";
}

Result<JsonValue> Body(const http_server::Request& request) {
  auto body = ParseJson(request.body, size_t{1} << 20);
  if (!body.ok()) return Status::Internal("the request body is not valid JSON: " + body.status().message());
  return body;
}

http_server::Response ClusterVersionRoute(Agent& agent, const http_server::Request& request) {
  if (request.method == "GET" || request.method == "HEAD") return Json(200, WriteJson(agent.ClusterVersionJson(), 2));
  if (request.method != "PATCH") {
    return Error(405, "MethodNotAllowed", fmt::format("the server does not allow this method on the requested resource: {}", request.method),
                 "clusterversions", "version");
  }
  if (!IsMergePatch(request)) {
    return Error(415, "UnsupportedMediaType", "only application/merge-patch+json patches are supported", "clusterversions", "version");
  }
  auto patch = Body(request);
  if (!patch.ok()) return Error(400, "BadRequest", patch.status().message(), "clusterversions", "version");
  auto updated = agent.PatchClusterVersion(*patch);
  if (!updated.ok()) return FromStatus(updated.status(), "clusterversions", "version");
  return Json(200, WriteJson(*updated, 2));
}

http_server::Response OperatorsRoute(Agent& agent, const http_server::Request& request, std::string_view rest) {
  if (rest.empty()) {
    if (request.method != "GET") return Error(405, "MethodNotAllowed", "only GET is allowed on the collection", "clusteroperators");
    auto items = agent.ListComponents();
    if (!items.ok()) return FromStatus(items.status(), "clusteroperators", "");
    JsonValue list = JsonObject({{"apiVersion", JsonValue("config.openshift.io/v1")},
                                        {"kind", JsonValue("ClusterOperatorList")},
                                        {"items", JsonValue(JsonArray(std::move(items).value()))}});
    return Json(200, WriteJson(list, 2));
  }
  std::string name(rest.substr(1));
  bool status_subresource = false;
  if (size_t slash = name.find('/'); slash != std::string::npos) {
    if (name.substr(slash) != "/status") return Error(404, "NotFound", "the server could not find the requested resource");
    status_subresource = true;
    name.resize(slash);
  }
  if (!IsObjectName(name)) return Error(422, "Invalid", fmt::format("metadata.name: Invalid value: \"{}\"", name), "clusteroperators", name, "metadata.name");
  if (request.method == "GET" || request.method == "HEAD") {
    auto object = agent.GetComponent(name);
    if (!object.ok()) return FromStatus(object.status(), "clusteroperators", name);
    if (!*object) return Error(404, "NotFound", fmt::format("clusteroperators.config.openshift.io \"{}\" not found", name), "clusteroperators", name);
    return Json(200, WriteJson(**object, 2));
  }
  auto body = Body(request);
  if (!body.ok()) return Error(400, "BadRequest", body.status().message(), "clusteroperators", name);
  if (request.method == "PUT" && !status_subresource) {
    auto stored = agent.PutComponent(name, *body);
    if (!stored.ok()) return FromStatus(stored.status(), "clusteroperators", name);
    return Json(200, WriteJson(*stored, 2));
  }
  if (request.method == "PATCH" && status_subresource) {
    if (!IsMergePatch(request)) return Error(415, "UnsupportedMediaType", "only application/merge-patch+json patches are supported");
    auto stored = agent.PatchComponentStatus(name, *body);
    if (!stored.ok()) return FromStatus(stored.status(), "clusteroperators", name);
    return Json(200, WriteJson(*stored, 2));
  }
  return Error(405, "MethodNotAllowed",
               fmt::format("the server does not allow {} on this resource (PUT the object, PATCH its /status)", request.method),
               "clusteroperators", name);
}

http_server::Response ObjectsRoute(Agent& agent, const http_server::Request& request, std::string_view rest) {
  if (request.method != "GET" && request.method != "HEAD") {
    return Error(405, "MethodNotAllowed", "objects are read-only: payloads write them", "objects");
  }
  if (rest.empty()) {
    auto names = agent.ListObjects();
    if (!names.ok()) return FromStatus(names.status(), "objects", "");
    JsonArray items;
    for (auto& n : *names) items.push_back(JsonValue(std::move(n)));
    return Json(200, WriteJson(JsonValue(JsonObject({{"kind", JsonValue("ObjectList")},
                                                  {"names", JsonValue(std::move(items))}})),
                               2));
  }
  std::string name(rest.substr(1));
  if (!IsObjectName(name)) return Error(422, "Invalid", fmt::format("metadata.name: Invalid value: \"{}\"", name), "objects", name);
  auto object = agent.GetObject(name);
  if (!object.ok()) return FromStatus(object.status(), "objects", name);
  if (!*object) return Error(404, "NotFound", fmt::format("object \"{}\" not found", name), "objects", name);
  return Json(200, WriteJson(**object, 2));
}

}  // namespace

http_server::Response HandleAgentApi(Agent& agent, const http_server::Request& request, const std::string& token) {
  const std::string& path = request.path;
  if (path == "/healthz") return http_server::Response::Text(200, "ok\n");
  if (path == "/readyz") return agent.ready() ? http_server::Response::Text(200, "ok\n") : http_server::Response::Text(503, "not ready\n");
  if (!token.empty() && !kube::BearerTokenMatches(request.Header("Authorization"), token)) {
    return Error(401, "Unauthorized", "Unauthorized");
  }
  if (path == "/metrics") return http_server::Response::Text(200, agent.Metrics(), "text/plain; version=0.0.4; charset=utf-8");
  if (path == kClusterVersion) return ClusterVersionRoute(agent, request);
  if (path.rfind(kOperators, 0) == 0 && (path.size() == kOperators.size() || path[kOperators.size()] == '/')) {
    return OperatorsRoute(agent, request, std::string_view(path).substr(kOperators.size()));
  }
  if (path.rfind(kObjects, 0) == 0 && (path.size() == kObjects.size() || path[kObjects.size()] == '/')) {
    return ObjectsRoute(agent, request, std::string_view(path).substr(kObjects.size()));
  }
  if (path == kUpdateProgress) {
    JsonValue progress = ToJson(agent.update_progress());
    SetMember(progress, "agentPid", JsonValue(int64_t(::getpid())));  // which process answers (hand-overs change it)
    return Json(200, WriteJson(progress, 2));
  }
  if (path.rfind(kGroupPath, 0) == 0 && path.rfind("/clusterversions/", std::string::npos) != std::string::npos) {
    return Error(404, "NotFound", "clusterversions.config.openshift.io: only \"version\" exists", "clusterversions");
  }
  return Error(404, "NotFound", "the server could not find the requested resource");
}

void ServeAgentApi(Agent& agent, ClusterVersionWatches& watches, const http_server::Request& request, const std::string& token,
                   std::function<void(http_server::Response)> respond) {
  const bool authorized = token.empty() || kube::BearerTokenMatches(request.Header("Authorization"), token);
  if (request.path != kClusterVersion || request.method != "GET" || !authorized) {
    respond(HandleAgentApi(agent, request, token));
    return;
  }
  auto params = http_server::ParseQuery(request.query);
  auto watch = params.ok() ? params->find("watch") : Parameters::const_iterator{};
  if (!params.ok() || watch == params->end() || (watch->second != "true" && watch->second != "1")) {
    respond(HandleAgentApi(agent, request, token));
    return;
  }
  std::optional<int64_t> seen;
  if (auto rv = params->find("resourceVersion"); rv != params->end() && !rv->second.empty()) {
    int64_t n = -1;
    auto [end, ec] = std::from_chars(rv->second.data(), rv->second.data() + rv->second.size(), n);
    if (ec != std::errc() || end != rv->second.data() + rv->second.size() || n < 0) {
      respond(Error(400, "BadRequest", fmt::format("resourceVersion: \"{}\" is not a resource version", rv->second), "clusterversions", "version"));
      return;
    }
    seen = n;
  }
  int64_t timeout = 60;
  if (auto t = params->find("timeoutSeconds"); t != params->end()) {
    auto [end, ec] = std::from_chars(t->second.data(), t->second.data() + t->second.size(), timeout);
    if (ec != std::errc() || end != t->second.data() + t->second.size() || timeout < 1 || timeout > 300) {
      respond(Error(400, "BadRequest", fmt::format("timeoutSeconds: \"{}\" must be a whole number from 1 to 300", t->second), "clusterversions",
                    "version"));
      return;
    }
  }
  watches.Wait(seen, std::chrono::seconds(timeout), std::move(respond));
}

}  // namespace cincinnati::agent
