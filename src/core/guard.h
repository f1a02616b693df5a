// Guarded(): where an exception becomes a Status.
//
// Expected failures are Status values everywhere in this code base. Guarded() catches
// what slips through anyway (std::bad_alloc, a third-party library that throws, a bug)
// at the boundaries where work changes threads or runs in a loop that must survive: a
// chain step, a periodic task, a pool job, an HTTP handler. It turns any exception into
// Status::Internal("<what> failed: <exception text>"), so no exception crosses a
// thread boundary. `fn` returns Status or Result<T>. Header-only, thread-safe.
#pragma once

#include <exception>
#include <string>
#include <string_view>

#include "core/status.h"

namespace cincinnati {

template <typename Fn>
auto Guarded(std::string_view what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return Status::Internal(std::string(what) + " failed: " + e.what());
  } catch (...) {
    return Status::Internal(std::string(what) + " failed: unknown exception");
  }
}

}  // namespace cincinnati
