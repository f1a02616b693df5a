#include "operator/operator_api.h"

#include <fmt/format.h>

#include "kube/api_access.h"
#include "kube/status_document.h"

namespace cincinnati::upgrade {
namespace {
using kube::FindMember;
using kube::TextOf;

http_server::Response Json(int status, const JsonValue& value) {
  return http_server::Response::Text(status, kube::WriteJson(value, 2) + "\n", "application/json");
}

http_server::Response Error(int code, std::string_view reason, const std::string& message) {
  return http_server::Response::Text(code, kube::StatusDocument(code, reason, message), "application/json");
}

}  // namespace

http_server::Response HandleOperatorApi(UpgradeOperator& op, const http_server::Request& request, const std::string& token) {
  const std::string& path = request.path;
  if (path == "/healthz" || path == "/readyz") return http_server::Response::Text(200, "ok\n");
  if (!token.empty() && !kube::BearerTokenMatches(request.Header("Authorization"), token)) {
    return Error(401, "Unauthorized", "Unauthorized");
  }
  const bool read = request.method == "GET" || request.method == "HEAD";
  if (path == "/metrics") return http_server::Response::Text(200, op.Metrics(), "text/plain; version=0.0.4; charset=utf-8");
  if (path == kConfigsPath) {
    if (!read) return Error(405, "MethodNotAllowed", "UpgradeConfigs come from the policy source; only GET is allowed");
    return Json(200, op.List());
  }
  if (path.rfind(std::string(kConfigsPath) + "/", 0) == 0) {
    if (!read) return Error(405, "MethodNotAllowed", "UpgradeConfigs come from the policy source; only GET is allowed");
    const std::string cluster = path.substr(kConfigsPath.size() + 1);
    auto config = op.Get(cluster);
    if (!config) {
      const std::string unreadable = op.UnreadableConfig(cluster);
      return Error(404, "NotFound", fmt::format("upgradeconfigs.upgrade.managed.openshift.io \"{}\" not found{}", cluster,
                                                unreadable.empty() ? "" : ": its UpgradeConfig cannot be read: " + unreadable));
    }
    return Json(200, *config);
  }
  if (path == kFleetPath) {
    if (!read) return Error(405, "MethodNotAllowed", "GET the fleet; POST .../pause or .../resume");
    return Json(200, op.FleetStatus());
  }
  if (path == std::string(kFleetPath) + "/pause" || path == std::string(kFleetPath) + "/resume") {
    if (request.method != "POST") return Error(405, "MethodNotAllowed", "use POST");
    // A browser cannot send this type cross-site without asking first: no web page can
    // pause a fleet through an administrator's browser.
    if (!kube::IsJsonRequest(request.Header("Content-Type"), {"application/json"})) {
      return Error(415, "UnsupportedMediaType", "POST with Content-Type: application/json");
    }
    Status s;
    if (path.ends_with("/pause")) {
      std::string reason;
      if (!request.body.empty()) {
        auto body = kube::ParseJson(request.body);
        const JsonValue* r = body.ok() ? FindMember(*body, "reason") : nullptr;
        if (!body.ok() || (r && !r->is_string())) return Error(400, "BadRequest", "the body must be {\"reason\": \"...\"}");
        if (r) reason = TextOf(*r);
      }
      s = op.Pause(reason);
    } else {
      s = op.Resume();
    }
    // A standby refuses: the leader's name is in the message.
    if (s.code() == Status::Code::kConflict) return Error(503, "ServiceUnavailable", s.message());
    if (!s.ok()) return Error(500, "InternalError", s.message());
    return Json(200, op.FleetStatus());
  }
  return Error(404, "NotFound", "the server could not find the requested resource");
}

}  // namespace cincinnati::upgrade
