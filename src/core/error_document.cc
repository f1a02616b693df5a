#include "core/error_document.h"

#include <simdjson.h>

#include "core/json_writer.h"

namespace cincinnati {

ErrorDocument ErrorDocument::FromStatus(const Status& status) {
  switch (status.code()) {
    case Status::Code::kMissingParams:
      return {"missing_params", "mandatory client parameters missing: " + status.message(), 400};
    case Status::Code::kInvalidParams:
      return {"invalid_params", "invalid client parameters: " + status.message(), 400};
    case Status::Code::kArchVersion:
      return {"arch_version_error", "failed to process version: " + status.message(), 500};
    default:
      return {"failed_plugin_execution", "failed to execute plugins: " + status.message(), 500};
  }
}

std::string ErrorDocument::ToJson() const {
  std::string out = "{\"kind\":";
  AppendJsonString(out, kind);
  out += ",\"value\":";
  AppendJsonString(out, value);
  out += '}';
  return out;
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
