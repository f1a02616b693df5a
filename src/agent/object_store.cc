#include "agent/object_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace cincinnati::agent {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTempMarker = ".tmp-";

Status Errno(std::string_view what, const fs::path& path) {
  return Status::IoError(fmt::format("{} {}: {}", what, path.string(), std::strerror(errno)));
}

Status CheckNames(const std::string& kind, const std::string& name) {
  if (!IsObjectName(kind)) return Status::InvalidArgument(fmt::format("invalid object kind '{}'", kind));
  if (!IsObjectName(name)) {
    return Status::InvalidArgument(fmt::format(
        "invalid object name '{}': a lower-case RFC 1123 subdomain must consist of lower case alphanumeric characters, "
        "'-' or '.', and must start and end with an alphanumeric character",
        name));
  }
  return Status::OK();
}

}  // namespace

bool IsObjectName(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-' || c == '.'; }) &&
         name.find("..") == std::string_view::npos;
}

Status WriteFileDurably(const fs::path& path, std::string_view bytes) {
  // A bare file name lives in the working directory ("beta.png" has no parent path).
  const fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) return Status::IoError(fmt::format("create {}: {}", parent.string(), ec.message()));
  fs::path temp = path;
  temp += std::string(kTempMarker) + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("open", temp);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = Errno("write", temp);
      ::close(fd);
      ::unlink(temp.c_str());
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    Status s = Errno("fsync", temp);
    ::close(fd);
    ::unlink(temp.c_str());
    return s;
  }
  ::close(fd);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    Status s = Errno("rename", temp);
    ::unlink(temp.c_str());
    return s;
  }
  int dir = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return Errno("open", parent);
  int rc = ::fsync(dir);
  ::close(dir);
  if (rc != 0) return Errno("fsync", parent);
  return Status::OK();
}

Result<std::optional<JsonValue>> FileObjectStore::Get(const std::string& kind, const std::string& name) {
  CINCINNATI_RETURN_IF_ERROR(CheckNames(kind, name));
  std::lock_guard lock(mu_);
  fs::path path = dir_ / kind / (name + ".json");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!fs::exists(path)) return std::optional<JsonValue>();
    return Errno("open", path);
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto value = ParseJson(text.str(), size_t{64} << 20);
  if (!value.ok()) return value.status().WithContext(path.string());
  return std::optional<JsonValue>(std::move(value).value());
}

Status FileObjectStore::Put(const std::string& kind, const std::string& name, const JsonValue& object) {
  CINCINNATI_RETURN_IF_ERROR(CheckNames(kind, name));
  std::lock_guard lock(mu_);
  // Temporary files of a writer that crashed (another process id) go first.
  const std::string leftover = name + ".json" + std::string(kTempMarker);
  std::error_code ec;
  for (fs::directory_iterator it(dir_ / kind, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind(leftover, 0) == 0) fs::remove(it->path(), ec);
  }
  return WriteFileDurably(dir_ / kind / (name + ".json"), WriteJson(object, 2) + "\n");
}

Result<std::vector<std::string>> FileObjectStore::List(const std::string& kind) {
  if (!IsObjectName(kind)) return Status::InvalidArgument(fmt::format("invalid object kind '{}'", kind));
  std::lock_guard lock(mu_);
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir_ / kind, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return names;
    return Status::IoError(fmt::format("list {}: {}", (dir_ / kind).string(), ec.message()));
  }
  for (const auto& entry : it) {
    std::string file = entry.path().filename().string();
    if (file.find(kTempMarker) != std::string::npos || entry.path().extension() != ".json") continue;
    names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace cincinnati::agent
