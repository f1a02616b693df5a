#include "agent/object_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>

namespace cincinnati::agent {

using kube::ParseJson;
using kube::WriteJson;
namespace {

namespace fs = std::filesystem;

using env::kTempMarker;
constexpr std::string_view kSetAsideSuffix = ".unreadable";

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

Result<std::optional<JsonValue>> FileObjectStore::Get(const std::string& kind, const std::string& name) {
  CINCINNATI_RETURN_IF_ERROR(CheckNames(kind, name));
  std::lock_guard lock(mu_);
  const fs::path path = dir_ / kind / (name + ".json");
  auto text = env::ReadFile(path, kMaxObjectBytes);
  if (!text.ok()) {
    if (text.status().code() == Status::Code::kNotFound) return std::optional<JsonValue>();
    return text.status();
  }
  auto value = ParseJson(*text, kMaxObjectBytes);
  if (!value.ok()) return value.status().WithContext(path.string());
  return std::optional<JsonValue>(std::move(value).value());
}

Status FileObjectStore::Put(const std::string& kind, const std::string& name, const JsonValue& object) {
  CINCINNATI_RETURN_IF_ERROR(CheckNames(kind, name));
  const std::string text = WriteJson(object, 2) + "\n";
  if (text.size() > kMaxObjectBytes) {
    return Status::TooLarge(fmt::format("{}/{} would be {}, over the limit of {} for one object", kind, name,
                                        env::HumanBytes(text.size()), env::HumanBytes(kMaxObjectBytes)));
  }
  std::lock_guard lock(mu_);
  // Temporary files of a writer that crashed (another process id) go first.
  const std::string leftover = name + ".json" + std::string(kTempMarker);
  std::error_code ec;
  for (fs::directory_iterator it(dir_ / kind, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind(leftover, 0) == 0) fs::remove(it->path(), ec);
  }
  return env::WriteFileDurably(dir_ / kind / (name + ".json"), text, fs_);
}

Result<std::vector<std::string>> FileObjectStore::List(const std::string& kind) {
  if (!IsObjectName(kind)) return Status::InvalidArgument(fmt::format("invalid object kind '{}'", kind));
  std::lock_guard lock(mu_);
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir_ / kind, ec);
  if (ec == std::errc::no_such_file_or_directory) return names;
  for (fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
    const fs::path& path = it->path();
    const std::string file = path.filename().string();
    if (file.find(kTempMarker) != std::string::npos || path.extension() != ".json") continue;
    const std::string name = path.stem().string();
    if (IsObjectName(name)) names.push_back(name);
  }
  if (ec) return Status::IoError(fmt::format("list {}: {}", (dir_ / kind).string(), ec.message()));
  std::sort(names.begin(), names.end());
  return names;
}

Status FileObjectStore::Delete(const std::string& kind, const std::string& name) {
  CINCINNATI_RETURN_IF_ERROR(CheckNames(kind, name));
  std::lock_guard lock(mu_);
  // unlink(2) itself: removing needs no space, so a fake full disk has nothing to refuse.
  const fs::path path = dir_ / kind / (name + ".json");
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return env::ErrnoStatus("remove", path, errno);
  return fs_.SyncPath(dir_ / kind);
}

Result<std::string> FileObjectStore::SetAside(const std::string& kind, const std::string& name) {
  CINCINNATI_RETURN_IF_ERROR(CheckNames(kind, name));
  std::lock_guard lock(mu_);
  const fs::path path = dir_ / kind / (name + ".json");
  // A new name each time: an earlier unreadable file is never overwritten.
  const auto seconds = env::UnixSeconds(clock_);
  fs::path aside;
  std::error_code ec;
  for (int n = 0;; ++n) {
    aside = path;
    aside += fmt::format("{}-{}", kSetAsideSuffix, seconds);
    if (n) aside += fmt::format("-{}", n);
    if (!fs::exists(aside, ec)) break;
  }
  CINCINNATI_RETURN_IF_ERROR(fs_.Rename(path, aside));
  CINCINNATI_RETURN_IF_ERROR(fs_.SyncPath(dir_ / kind));
  return aside.string();
}

std::string FileObjectStore::Location(const std::string& kind, const std::string& name) const {
  return (dir_ / kind / (name + ".json")).string();
}

}  // namespace cincinnati::agent
