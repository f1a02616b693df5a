// ErrorDocument: the reference's error body {"kind": ..., "value": ...}.
//
// kind is one of the reference's error kinds (missing_params, invalid_params,
// arch_version_error, failed_plugin_execution, ...); value is the kind's fixed prefix
// followed by the detail. FromStatus maps library errors to kinds and HTTP codes.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace cincinnati {

struct ErrorDocument {
  std::string kind;
  std::string value;
  int http_status = 500;

  static ErrorDocument FromStatus(const Status& status);
  std::string ToJson() const;
  static Result<ErrorDocument> Parse(std::string_view json);
  bool operator==(const ErrorDocument& o) const { return kind == o.kind && value == o.value; }
};

}  // namespace cincinnati
