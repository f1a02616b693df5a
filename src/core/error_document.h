// ErrorDocument: the reference's error body {"kind": ..., "value": ...}.
//
// kind is one of the reference's error kinds; value is the kind's fixed prefix
// followed by the detail; each kind has its HTTP status (openshift/cincinnati: commons/src/errors.rs). FromStatus maps
// library errors to kinds.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace cincinnati {

struct ErrorDocument {
  std::string kind;
  std::string value;
  int http_status = 500;

  // A document of a known kind ("failed_upstream_fetch", ...) with `detail` after the
  // kind's prefix. Unknown kinds get status 500 and the detail as value.
  static ErrorDocument Of(std::string_view kind, std::string_view detail = {});
  static ErrorDocument FromStatus(const Status& status);
  std::string ToJson() const;
  static Result<ErrorDocument> Parse(std::string_view json);
  // The value without its kind's prefix: what Of() was given ("unknown channel ..."
  // rather than "invalid client parameters: unknown channel ...").
  std::string Detail() const;
  bool operator==(const ErrorDocument& o) const { return kind == o.kind && value == o.value; }
};

}  // namespace cincinnati
