// Status and Result<T>: the return values for expected failures.
//
// A Status is either OK or carries a Code and a human-readable message that names
// what failed (file, version, parameter). Result<T> holds a T or a non-OK Status.
// Exceptions are not used for expected failures anywhere in the library.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace cincinnati {

class Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,  // malformed input: bad semver, bad JSON, bad YAML...
    kNotFound,         // a file, node or key that must exist does not
    kIoError,          // the operating system refused a read or write
    kCycle,            // an edge would close a cycle
    kConflict,         // two inputs disagree (same version, different payload)
    kMissingParams,    // a mandatory client parameter is absent
    kInvalidParams,    // a client parameter is malformed
    kArchVersion,      // a node version could not be processed by the arch filter
    kInternal,
    kNoSpace,          // a write found the device (or the quota) full: ENOSPC, EDQUOT
    kTooLarge,         // an input is over its size limit
  };

  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status IoError(std::string m) { return {Code::kIoError, std::move(m)}; }
  static Status Cycle(std::string m) { return {Code::kCycle, std::move(m)}; }
  static Status Conflict(std::string m) { return {Code::kConflict, std::move(m)}; }
  static Status MissingParams(std::string m) { return {Code::kMissingParams, std::move(m)}; }
  static Status InvalidParams(std::string m) { return {Code::kInvalidParams, std::move(m)}; }
  static Status ArchVersion(std::string m) { return {Code::kArchVersion, std::move(m)}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
  static Status NoSpace(std::string m) { return {Code::kNoSpace, std::move(m)}; }
  static Status TooLarge(std::string m) { return {Code::kTooLarge, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "<context>: <message>".
  Status WithContext(std::string_view context) const;
  std::string ToString() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

std::string_view CodeName(Status::Code code);

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}   // NOLINT: must not be OK

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace cincinnati

// Propagates a non-OK Status from an expression returning Status.
#define CINCINNATI_RETURN_IF_ERROR(expr)            \
  do {                                              \
    ::cincinnati::Status _st = (expr);              \
    if (!_st.ok()) return _st;                      \
  } while (0)

#define CINCINNATI_CONCAT_INNER(a, b) a##b
#define CINCINNATI_CONCAT(a, b) CINCINNATI_CONCAT_INNER(a, b)
// Declares `lhs` from a Result<T> expression, or returns its Status.
#define CINCINNATI_ASSIGN_OR_RETURN(lhs, expr)                              \
  auto CINCINNATI_CONCAT(_res_, __LINE__) = (expr);                         \
  if (!CINCINNATI_CONCAT(_res_, __LINE__).ok())                             \
    return CINCINNATI_CONCAT(_res_, __LINE__).status();                     \
  lhs = std::move(CINCINNATI_CONCAT(_res_, __LINE__)).value()
