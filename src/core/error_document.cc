#include "core/error_document.h"

#include <boost/json.hpp>
#include <simdjson.h>

#include "core/json.h"
#include "core/strings.h"

namespace cincinnati {

namespace {

struct Kind {
  std::string_view kind;
  std::string_view prefix;  // value = prefix + detail
  int http_status;
};

constexpr Kind kKinds[] = {
    {"failed_json_in", "failed to deserialize JSON: ", 500},
    {"failed_json_out", "failed to serialize JSON: ", 500},
    {"failed_upstream_fetch", "failed to fetch upstream graph: ", 500},
    {"failed_plugin_execution", "failed to execute plugins: ", 500},
    {"failed_upstream_request", "failed to assemble upstream request", 500},
    {"invalid_content_type", "invalid Content-Type requested", 406},
    {"missing_params", "mandatory client parameters missing: ", 400},
    {"invalid_params", "invalid client parameters: ", 400},
    {"arch_version_error", "failed to process version: ", 500},
    {"file_open_err", "failed to open file: unable to open ", 500},
    {"does_not_exist", "does not exist: ", 404},
};

}  // namespace

ErrorDocument ErrorDocument::Of(std::string_view kind, std::string_view detail) {
  for (const Kind& k : kKinds) {
    if (k.kind == kind) return {std::string(kind), std::string(k.prefix) + std::string(detail), k.http_status};
  }
  return {std::string(kind), std::string(detail), 500};
}

std::string ErrorDocument::Detail() const {
  for (const Kind& k : kKinds) {
    if (k.kind == kind && std::string_view(value).starts_with(k.prefix)) return value.substr(k.prefix.size());
  }
  return value;
}

ErrorDocument ErrorDocument::FromStatus(const Status& status) {
  switch (status.code()) {
    case Status::Code::kMissingParams: return Of("missing_params", status.message());
    case Status::Code::kInvalidParams: return Of("invalid_params", status.message());
    case Status::Code::kArchVersion: return Of("arch_version_error", status.message());
    default: return Of("failed_plugin_execution", status.message());
  }
}

std::string ErrorDocument::ToJson() const {
  // A message may echo client or file bytes: never let it make the JSON invalid.
  return WriteJson(boost::json::object{{"kind", kind}, {"value", IsValidUtf8(value) ? value : ToValidUtf8(value)}});
}

Result<ErrorDocument> ErrorDocument::Parse(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json.data(), json.size());
  simdjson::dom::object o;
  if (parser.parse(padded).get_object().get(o)) {
    return Status::InvalidArgument("error document must be a JSON object");
  }
  std::string_view kind, value;
  if (o["kind"].get_string().get(kind) || o["value"].get_string().get(value)) {
    return Status::InvalidArgument("error document needs string 'kind' and 'value'");
  }
  return ErrorDocument{std::string(kind), std::string(value), 500};
}

}  // namespace cincinnati
