#include "agent/payload.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include <spdlog/spdlog.h>

#include "agent/manifests.h"
#include "agent/release_verifier.h"
#include "core/sha256.h"
#include "graph-data/file_reader.h"
#include "kube/yaml_json.h"
#include "registry/layer.h"
#include "registry/release_image.h"

namespace cincinnati::agent {

using kube::ParseJson;
using kube::WriteJson;
using kube::JsonObject;
using kube::JsonArray;
using kube::FindMember;
using kube::TextOf;
using kube::IntegerOf;
using kube::ItemsOf;
namespace {

namespace fs = std::filesystem;
constexpr std::string_view kPartialPrefix = ".partial-";
constexpr size_t kMaxIndexBytes = size_t{16} << 20;
constexpr size_t kMaxPayloadDocumentBytes = size_t{4} << 20;  // release-metadata, image-references

struct WrittenFile {
  uint64_t size = 0;
  std::string sha256;
};
using PayloadIndex = std::map<std::string, WrittenFile>;  // path under the payload -> what was written

// Every file and directory under `dir`, and `dir` itself, on disk.
Status SyncTree(const fs::path& dir, env::FileSystem& files) {
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<env::DirectoryEntry> entries, files.ListTree(dir));
  for (const env::DirectoryEntry& entry : entries) CINCINNATI_RETURN_IF_ERROR(files.SyncPath(entry.path));
  return files.SyncPath(dir);
}

std::string IndexJson(const PayloadIndex& index) {
  JsonArray entries;
  for (const auto& [path, file] : index) {
    entries.push_back(JsonValue(JsonObject({{"path", JsonValue(path)},
                                         {"size", JsonValue(int64_t(static_cast<int64_t>(file.size)))},
                                         {"sha256", JsonValue(file.sha256)}})));
  }
  return WriteJson(JsonValue(JsonObject({{"files", JsonValue(std::move(entries))}}))) + "\n";
}

Result<PayloadIndex> ReadIndex(const fs::path& dir) {
  auto text = env::ReadFile(dir / kPayloadIndexFile, kMaxIndexBytes);
  if (!text.ok()) {
    if (text.status().code() == Status::Code::kNotFound) {
      return Status::NotFound("it has no record of what its download wrote (an older agent pulled it)");
    }
    return text.status();
  }
  auto json = ParseJson(*text, kMaxIndexBytes);
  const JsonValue* files = json.ok() ? FindMember(*json, "files") : nullptr;
  if (!files || !files->is_array()) return Status::InvalidArgument(fmt::format("{} is not a payload record", kPayloadIndexFile));
  PayloadIndex index;
  for (const auto& entry : ItemsOf(*files)) {
    const JsonValue* path = FindMember(entry, "path");
    const JsonValue* size = FindMember(entry, "size");
    const JsonValue* sha = FindMember(entry, "sha256");
    if (!path || !path->is_string() || !size || !IntegerOf(*size) || *IntegerOf(*size) < 0 || !sha || !sha->is_string()) {
      return Status::InvalidArgument(fmt::format("{} is not a payload record", kPayloadIndexFile));
    }
    index[TextOf(*path)] = {static_cast<uint64_t>(*IntegerOf(*size)), TextOf(*sha)};
  }
  return index;
}

// Only manifests/ and release-manifests/ of a payload are unpacked.
bool PayloadPath(const std::string& path, bool /*directory*/) {
  fs::path p = fs::path(path).lexically_normal();
  std::string top = p.begin() == p.end() ? "" : p.begin()->string();
  if (top == ".") {
    auto second = std::next(p.begin());
    top = second == p.end() ? "" : second->string();
  }
  return top == "manifests" || top == "release-manifests";
}

}  // namespace

std::string PayloadDirectoryName(const std::string& pullspec) {
  unsigned char md5[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(pullspec.data(), pullspec.size(), md5, &length, EVP_md5(), nullptr);
  std::string encoded(4 * ((length + 2) / 3), '\0');
  EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()), md5, static_cast<int>(length));
  for (char& c : encoded) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return encoded;  // base64url, as the CVO names its payload directories
}

Status VerifyPayloadOnDisk(const std::string& dir) {
  const fs::path root(dir);
  CINCINNATI_ASSIGN_OR_RETURN(PayloadIndex index, ReadIndex(root));
  for (const auto& [path, expected] : index) {
    auto content = env::ReadFile(root / path, expected.size, path);
    if (!content.ok()) {
      switch (content.status().code()) {
        case Status::Code::kNotFound:
          return Status::InvalidArgument(fmt::format("{} is missing ({} bytes were written)", path, expected.size));
        case Status::Code::kTooLarge:
          return Status::InvalidArgument(fmt::format("{} is larger than the {} bytes that were written", path, expected.size));
        case Status::Code::kIoError:
          return content.status();
        default:
          return Status::InvalidArgument(content.status().message());
      }
    }
    if (content->size() != expected.size) {
      return Status::InvalidArgument(fmt::format("{} is {} bytes, but {} were written", path, content->size(), expected.size));
    }
    if (Sha256Hex(*content) != expected.sha256) {
      return Status::InvalidArgument(fmt::format("{} does not hold the bytes that were written", path));
    }
  }
  size_t files = 0;
  for (const char* top : {"manifests", "release-manifests"}) {
    auto entries = env::DefaultFileSystem().ListTree(root / top);
    if (!entries.ok() && entries.status().code() != Status::Code::kNotFound) return entries.status();
    for (const env::DirectoryEntry& entry : entries.ok() ? *entries : std::vector<env::DirectoryEntry>{}) {
      if (entry.type == env::FileType::kDirectory) continue;
      const std::string relative = entry.path.lexically_relative(root).generic_string();
      if (!index.count(relative)) return Status::InvalidArgument(fmt::format("{} was not written by the download", relative));
      ++files;
    }
  }
  if (files != index.size()) return Status::InvalidArgument(fmt::format("{} written files are missing", index.size() - files));
  return Status::OK();
}

Result<std::string> DownloadPayload(registry::RegistryClient& client, const std::string& pullspec, const std::string& root,
                                    std::stop_token stop, env::FileSystem& files) {
  CINCINNATI_ASSIGN_OR_RETURN(std::string digest, PinnedDigest(pullspec));
  const fs::path target = fs::path(root) / PayloadDirectoryName(pullspec);
  bool stale = false;  // a payload is there, but not what was downloaded: replaced once a new one is whole
  if (files.IsDirectory(target)) {
    Status whole = VerifyPayloadOnDisk(target.string());
    if (whole.ok()) return target.string();  // renamed into place and unchanged since
    spdlog::warn("the payload of {} at {} is not what was downloaded ({}): fetching it again", pullspec, target.string(),
                 whole.message());
    stale = true;
  }
  CINCINNATI_RETURN_IF_ERROR(files.CreateDirectories(root));
  // What an interrupted download left behind.
  if (auto entries = files.ListDirectory(root); entries.ok()) {
    for (const env::DirectoryEntry& entry : *entries) {
      if (entry.path.filename().string().rfind(kPartialPrefix, 0) == 0) env::RemoveLeftover(files, entry.path, "an interrupted download");
    }
  }
  const fs::path partial = fs::path(root) / fmt::format("{}{}-{}", kPartialPrefix, PayloadDirectoryName(pullspec), ::getpid());
  CINCINNATI_RETURN_IF_ERROR(files.CreateDirectories(partial));
  auto fail = [&](Status s) {
    env::RemoveLeftover(files, partial, "a failed download");
    return s.WithContext(fmt::format("pulling {}", pullspec));
  };

  auto manifest = client.GetManifest(digest);
  if (!manifest.ok()) return fail(manifest.status());
  auto image = registry::InspectManifest(client, *manifest);
  if (!image.ok()) return fail(image.status());
  PayloadIndex index;
  registry::ExtractOptions extract;
  extract.fs = &files;
  extract.on_file = [&](const std::string& path, std::string_view content) {
    index[path] = {content.size(), Sha256Hex(content)};
  };
  extract.on_remove = [&](const std::string& path) {  // a whiteout: the path and all under it
    index.erase(path);
    for (auto it = index.lower_bound(path + "/"); it != index.end() && it->first.rfind(path + "/", 0) == 0;) it = index.erase(it);
  };
  for (auto it = image->layers_top_first.rbegin(); it != image->layers_top_first.rend(); ++it) {  // lowest first
    if (stop.stop_requested()) return fail(Status::IoError("stopped"));
    auto blob = client.GetBlob(it->digest, it->size);
    if (!blob.ok()) return fail(blob.status());
    Status unpacked = registry::ExtractLayer(*blob, partial.string(), PayloadPath, extract);
    if (!unpacked.ok()) return fail(unpacked.WithContext("layer " + it->digest));
  }
  Status recorded = env::WriteNewFile(partial / kPayloadIndexFile, IndexJson(index), files);
  if (!recorded.ok()) return fail(recorded);
  Status synced = SyncTree(partial, files);
  if (!synced.ok()) return fail(synced);
  // Read back: what is on disk is what was written, before it is ever used.
  Status whole = VerifyPayloadOnDisk(partial.string());
  if (!whole.ok()) return fail(whole.WithContext("the payload read back from disk differs from what was written"));
  const fs::path replaced = fs::path(root) / fmt::format("{}{}-{}", kPartialPrefix, "stale", PayloadDirectoryName(pullspec));
  if (stale) {
    env::RemoveLeftover(files, replaced, "a stale payload");
    if (Status moved = files.Rename(target, replaced); !moved.ok()) return fail(moved);
  }
  Status renamed = files.Rename(partial, target);
  if (!renamed.ok()) return fail(renamed);
  if (stale) env::RemoveLeftover(files, replaced, "a replaced payload");
  CINCINNATI_RETURN_IF_ERROR(files.SyncPath(root));
  return target.string();
}

Result<PayloadInfo> ReadPayload(const std::string& dir) {
  const fs::path root(dir);
  env::FileSystem& disk = env::DefaultFileSystem();
  for (const char* sub : {"manifests", "release-manifests"}) {
    if (!disk.IsDirectory(root / sub)) return Status::InvalidArgument(fmt::format("the payload has no {}/ directory", sub));
  }
  PayloadInfo info;
  info.dir = dir;
  const fs::path metadata_path = root / registry::kReleaseMetadataPath;
  if (!disk.IsRegularFile(metadata_path)) {
    return Status::InvalidArgument(fmt::format("the payload has no {}", registry::kReleaseMetadataPath));
  }
  CINCINNATI_ASSIGN_OR_RETURN(std::string metadata_text, env::ReadFile(metadata_path, kMaxPayloadDocumentBytes));
  auto metadata = ParseReleaseMetadata(metadata_text);
  if (!metadata.ok()) return metadata.status().WithContext(registry::kReleaseMetadataPath);
  info.metadata = std::move(metadata).value();

  const std::string references = "release-manifests/image-references";
  if (!disk.IsRegularFile(root / references)) return Status::InvalidArgument("the payload has no " + references);
  CINCINNATI_ASSIGN_OR_RETURN(std::string references_text, env::ReadFile(root / references, kMaxPayloadDocumentBytes));
  CINCINNATI_ASSIGN_OR_RETURN(JsonValue stream, kube::YamlToJson(references_text, references));
  const JsonValue* kind = FindMember(stream, "kind");
  if (!kind || !kind->is_string() || TextOf(*kind) != "ImageStream") {
    return Status::InvalidArgument(references + ": kind must be ImageStream");
  }
  const JsonValue* metadata_json = FindMember(stream, "metadata");
  const JsonValue* name = metadata_json ? FindMember(*metadata_json, "name") : nullptr;
  const std::string version = info.metadata.version.ToString();
  if (!name || !name->is_string() || TextOf(*name) != version) {
    return Status::InvalidArgument(fmt::format("{}: metadata.name must be the release's version {}", references, version));
  }
  const JsonValue* spec = FindMember(stream, "spec");
  const JsonValue* tags = spec ? FindMember(*spec, "tags") : nullptr;
  if (tags && tags->is_array()) {
    for (size_t i = 0; i < ItemsOf(*tags).size(); ++i) {
      const JsonValue& tag = ItemsOf(*tags)[i];
      const JsonValue* tag_name = FindMember(tag, "name");
      const JsonValue* from = FindMember(tag, "from");
      const JsonValue* pull = from ? FindMember(*from, "name") : nullptr;
      if (!tag_name || !tag_name->is_string() || !pull || !pull->is_string()) {
        return Status::InvalidArgument(fmt::format("{}: spec.tags[{}] needs name and from.name", references, i));
      }
      info.images[TextOf(*tag_name)] = TextOf(*pull);
    }
  }
  return info;
}

}  // namespace cincinnati::agent
