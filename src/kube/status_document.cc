#include "kube/status_document.h"

#include <boost/json.hpp>

#include "core/json.h"

namespace cincinnati::kube {

std::string StatusDocument(int code, std::string_view reason, std::string_view message, std::string_view kind,
                           std::string_view name, std::string_view field, std::string_view cause) {
  boost::json::object out{{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", boost::json::object()},
                          {"status", "Failure"}, {"message", message}, {"reason", reason}};
  if (!kind.empty()) {
    boost::json::object details{{"name", name}, {"group", "config.openshift.io"}, {"kind", kind}};
    if (!field.empty()) {
      details["causes"] = boost::json::array{
          boost::json::object{{"reason", "FieldValueInvalid"}, {"message", cause.empty() ? message : cause}, {"field", field}}};
    }
    out["details"] = std::move(details);
  }
  out["code"] = code;
  return WriteJson(out);
}

http_server::Response ServerErrorResponse(int status, std::string_view message) {
  const std::string_view reason = status == 413   ? "RequestEntityTooLarge"
                                  : status == 431 ? "RequestHeaderFieldsTooLarge"
                                                  : "BadRequest";
  return http_server::Response::Text(status, StatusDocument(status, reason, message) + "\n", "application/json");
}

}  // namespace cincinnati::kube
