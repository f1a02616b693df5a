#include "kube/status_document.h"

#include <fmt/format.h>

#include "core/json_writer.h"

namespace cincinnati::kube {

std::string StatusDocument(int code, std::string_view reason, std::string_view message, std::string_view kind,
                           std::string_view name, std::string_view field, std::string_view cause) {
  std::string out = R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":)";
  AppendJsonString(out, message);
  out += ",\"reason\":";
  AppendJsonString(out, reason);
  if (!kind.empty()) {
    out += ",\"details\":{\"name\":";
    AppendJsonString(out, name);
    out += ",\"group\":\"config.openshift.io\",\"kind\":";
    AppendJsonString(out, kind);
    if (!field.empty()) {
      out += ",\"causes\":[{\"reason\":\"FieldValueInvalid\",\"message\":";
      AppendJsonString(out, cause.empty() ? message : cause);
      out += ",\"field\":";
      AppendJsonString(out, field);
      out += "}]";
    }
    out += '}';
  }
  out += fmt::format(",\"code\":{}}}", code);
  return out;
}

http_server::Response ServerErrorResponse(int status, std::string_view message) {
  const std::string_view reason = status == 413   ? "RequestEntityTooLarge"
                                  : status == 431 ? "RequestHeaderFieldsTooLarge"
                                                  : "BadRequest";
  return http_server::Response::Text(status, StatusDocument(status, reason, message) + "\n", "application/json");
}

}  // namespace cincinnati::kube
