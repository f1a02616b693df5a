// SharedLibrary: a library of the system, opened the first time one of its symbols is
// asked for instead of when the process starts.
//
// Why: linked the usual way, every process of the `cincinnati` executable loaded and
// relocated libcurl, GPGME, libgit2, Graphviz and libarchive with their ~50 dependencies
// (GnuTLS, Kerberos, LDAP, libxml2, ICU, ...) before `main`: about 7 ms of a 12 ms start,
// paid by commands that use none of them (`graph build`, `path`, `explain`, `--help`)
// and by every test that runs the executable. src/on_demand defines the functions of
// those libraries the project calls, with the libraries' own declarations, each calling
// the real one through a SharedLibrary; callers include the libraries' headers as
// before and see no difference.
//
// Contract:
// - Find(symbol) opens the library once (RTLD_NOW | RTLD_LOCAL, by its soname, as the
//   dynamic loader would have) and returns the symbol's address, or an error naming
//   the library, the Debian package that provides it and the loader's message.
// - Require(symbol) is Find for a function that has no way to return an error of its
//   own: a library that cannot be opened or lacks the symbol is a broken installation,
//   so it writes that error to stderr and ends the process with status 1.
// - Thread-safe: the first caller opens the library, the others wait for it; the
//   library is never closed. Constant-initialized, so usable from static initializers.
// - OpenModule opens the first of `paths` that exists (a module built with the
//   executable, such as the PostgreSQL session's); FindSymbol looks a symbol up in it.
//   Errors name every path tried, or the symbol, and the loader's message.
#pragma once

#include <array>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cincinnati::env {

class SharedLibrary {
 public:
  constexpr SharedLibrary(const char* soname, const char* package) : soname_(soname), package_(package) {}
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  Result<void*> Find(const char* symbol);
  void* Require(const char* symbol);
  bool opened() const { return handle_ != nullptr; }

 private:
  void Open();

  const char* soname_;
  const char* package_;
  std::once_flag once_;
  void* handle_ = nullptr;
  std::array<char, 512> open_error_{};  // the loader's message when the library could not be opened
};

Result<void*> OpenModule(const std::vector<std::string>& paths);
Result<void*> FindSymbol(void* handle, const char* symbol, std::string_view library);

}  // namespace cincinnati::env
