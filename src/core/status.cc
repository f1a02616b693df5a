#include "core/status.h"

namespace cincinnati {

std::string_view CodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk: return "ok";
    case Status::Code::kInvalidArgument: return "invalid argument";
    case Status::Code::kNotFound: return "not found";
    case Status::Code::kIoError: return "I/O error";
    case Status::Code::kCycle: return "cycle";
    case Status::Code::kConflict: return "conflict";
    case Status::Code::kMissingParams: return "missing parameters";
    case Status::Code::kInvalidParams: return "invalid parameters";
    case Status::Code::kArchVersion: return "arch version error";
    case Status::Code::kInternal: return "internal error";
    case Status::Code::kNoSpace: return "no space left";
    case Status::Code::kTooLarge: return "too large";
  }
  return "unknown";
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m));
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return message_;
}

}  // namespace cincinnati
