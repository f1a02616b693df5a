#include "agent/object_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

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
  if (auto entries = fs_.ListDirectory(dir_ / kind); entries.ok()) {
    for (const env::DirectoryEntry& entry : *entries) {
      if (entry.path.filename().string().rfind(leftover, 0) == 0) env::RemoveLeftover(fs_, entry.path, "a crashed writer's temporary file");
    }
  }
  return env::WriteFileDurably(dir_ / kind / (name + ".json"), text, fs_);
}

Result<std::vector<std::string>> FileObjectStore::List(const std::string& kind) {
  if (!IsObjectName(kind)) return Status::InvalidArgument(fmt::format("invalid object kind '{}'", kind));
  std::lock_guard lock(mu_);
  std::vector<std::string> names;
  auto entries = fs_.ListDirectory(dir_ / kind);
  if (!entries.ok() && entries.status().code() == Status::Code::kNotFound) return names;
  if (!entries.ok()) return Status::IoError(fmt::format("list {}: {}", (dir_ / kind).string(), entries.status().message()));
  for (const env::DirectoryEntry& entry : *entries) {
    const fs::path& path = entry.path;
    const std::string file = path.filename().string();
    if (file.find(kTempMarker) != std::string::npos || path.extension() != ".json") continue;
    const std::string name = path.stem().string();
    if (IsObjectName(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Status FileObjectStore::Delete(const std::string& kind, const std::string& name) {
  CINCINNATI_RETURN_IF_ERROR(CheckNames(kind, name));
  std::lock_guard lock(mu_);
  // Removing needs no space: a fake full disk passes it to the real one.
  const fs::path path = dir_ / kind / (name + ".json");
  CINCINNATI_RETURN_IF_ERROR(fs_.RemoveFile(path));
  return fs_.SyncPath(dir_ / kind);
}

Result<std::string> FileObjectStore::SetAside(const std::string& kind, const std::string& name) {
  CINCINNATI_RETURN_IF_ERROR(CheckNames(kind, name));
  std::lock_guard lock(mu_);
  const fs::path path = dir_ / kind / (name + ".json");
  // A new name each time: an earlier unreadable file is never overwritten.
  const auto seconds = env::UnixSeconds(clock_);
  fs::path aside;
  for (int n = 0;; ++n) {
    aside = path;
    aside += fmt::format("{}-{}", kSetAsideSuffix, seconds);
    if (n) aside += fmt::format("-{}", n);
    if (!fs_.Exists(aside)) break;
  }
  CINCINNATI_RETURN_IF_ERROR(fs_.Rename(path, aside));
  CINCINNATI_RETURN_IF_ERROR(fs_.SyncPath(dir_ / kind));
  return aside.string();
}

std::string FileObjectStore::Location(const std::string& kind, const std::string& name) const {
  return (dir_ / kind / (name + ".json")).string();
}

}  // namespace cincinnati::agent
