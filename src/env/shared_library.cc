#include "env/shared_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>

#include "fmt/format.h"

namespace cincinnati::env {

void SharedLibrary::Open() {
  std::call_once(once_, [this] {
    handle_ = ::dlopen(soname_, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* why = ::dlerror();
      std::snprintf(open_error_.data(), open_error_.size(), "%s", why != nullptr ? why : "unknown error");
    }
  });
}

Result<void*> SharedLibrary::Find(const char* symbol) {
  Open();
  if (handle_ == nullptr) {
    return Status::NotFound(fmt::format("cannot load {} (Debian package {}; scripts/deps.sh installs it): {}", soname_,
                                           package_, open_error_.data()));
  }
  return FindSymbol(handle_, symbol, soname_);
}

void* SharedLibrary::Require(const char* symbol) {
  Result<void*> address = Find(symbol);
  if (address.ok()) return *address;
  const std::string line = fmt::format("cincinnati: broken installation: {}\n", address.status().message());
  // Written in one call, unbuffered: the process ends right after.
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
  ::_exit(1);
}

Result<void*> FindSymbol(void* handle, const char* symbol, std::string_view library) {
  ::dlerror();
  void* address = ::dlsym(handle, symbol);
  if (address == nullptr) {
    const char* why = ::dlerror();
    return Status::NotFound(fmt::format("{} has no {}: {}", library, symbol, why != nullptr ? why : "null symbol"));
  }
  return address;
}

Result<void*> OpenModule(const std::vector<std::string>& paths) {
  std::string tried;
  for (const std::string& path : paths) {
    if (void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
    const char* why = ::dlerror();
    tried += fmt::format("{}{}", tried.empty() ? "" : "; ", why != nullptr ? why : path);
  }
  return Status::NotFound(fmt::format("no module could be opened (tried: {})", tried));
}

}  // namespace cincinnati::env
