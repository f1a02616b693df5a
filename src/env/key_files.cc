#include "env/key_files.h"

#include <filesystem>

#include <fmt/format.h>

#include "core/strings.h"
#include "env/file_system.h"

namespace cincinnati::env {

namespace fs = std::filesystem;

namespace {
constexpr size_t kMaxKeyFile = 64 * 1024;
constexpr size_t kMaxTrustedKeys = 64;
}  // namespace

Result<std::shared_ptr<const SigningKey>> LoadSigningKey(const std::string& path) {
  CINCINNATI_ASSIGN_OR_RETURN(std::string pem, ReadFile(path, kMaxKeyFile));
  auto key = SigningKey::FromPem(pem);
  if (!key.ok()) return Status::InvalidArgument(fmt::format("{}: {}", path, key.status().message()));
  return key;
}

Result<std::vector<std::shared_ptr<const SigningKey>>> LoadSigningKeys(const std::string& paths) {
  std::vector<std::shared_ptr<const SigningKey>> keys;
  for (std::string_view path : Split(paths, ',')) {
    path = TrimWhitespace(path);
    if (path.empty()) continue;
    CINCINNATI_ASSIGN_OR_RETURN(auto key, LoadSigningKey(std::string(path)));
    keys.push_back(std::move(key));
  }
  if (keys.empty() || keys.size() > kMaxSignatures) {
    return Status::InvalidArgument(fmt::format("'{}': one to {} signing key files", paths, kMaxSignatures));
  }
  return keys;
}

Result<TrustedKeys> LoadTrustedKeys(const std::string& dir) {
  auto entries = DefaultFileSystem().ListDirectory(dir);
  if (!entries.ok()) return Status::IoError(fmt::format("trusted keys {}: {}", dir, entries.status().message()));
  TrustedKeys keys;
  size_t files = 0;
  for (const DirectoryEntry& entry : *entries) {
    const fs::path& path = entry.path;
    if (path.extension() != ".pem" || entry.type != FileType::kRegular) continue;
    if (++files > kMaxTrustedKeys) return Status::InvalidArgument(fmt::format("trusted keys {}: more than {} keys", dir, kMaxTrustedKeys));
    CINCINNATI_ASSIGN_OR_RETURN(std::string pem, ReadFile(path, kMaxKeyFile));
    auto key = PublicKey::FromPem(pem);
    if (!key.ok()) return Status::InvalidArgument(fmt::format("{}: {}", path.string(), key.status().message()));
    keys.Add(std::move(key).value());
  }
  return keys;
}

}  // namespace cincinnati::env
