#include "agent/payload.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>
#include <random>

#include "agent/manifests.h"
#include "agent/release_verifier.h"
#include "graph-data/file_reader.h"
#include "registry/layer.h"
#include "registry/release_image.h"

namespace cincinnati::agent {
namespace {

namespace fs = std::filesystem;
constexpr std::string_view kPartialPrefix = ".partial-";

Status SyncPath(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError(fmt::format("open {}: {}", path.string(), std::strerror(errno)));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Status::IoError(fmt::format("fsync {}: {}", path.string(), std::strerror(errno)));
  return Status::OK();
}

// Every file and directory under `dir`, and `dir` itself, on disk.
Status SyncTree(const fs::path& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    CINCINNATI_RETURN_IF_ERROR(SyncPath(it->path()));
  }
  if (ec) return Status::IoError(fmt::format("{}: {}", dir.string(), ec.message()));
  return SyncPath(dir);
}

bool PayloadPath(const std::string& path, bool directory) {
  fs::path p = fs::path(path).lexically_normal();
  std::string top = p.begin() == p.end() ? "" : p.begin()->string();
  if (top == ".") {
    auto second = std::next(p.begin());
    top = second == p.end() ? "" : second->string();
  }
  (void)directory;
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

Result<std::string> DownloadPayload(registry::RegistryClient& client, const std::string& pullspec, const std::string& root,
                                    std::stop_token stop) {
  CINCINNATI_ASSIGN_OR_RETURN(std::string digest, PinnedDigest(pullspec));
  const fs::path target = fs::path(root) / PayloadDirectoryName(pullspec);
  std::error_code ec;
  if (fs::is_directory(target, ec)) return target.string();  // renamed into place: complete
  fs::create_directories(root, ec);
  if (ec) return Status::IoError(fmt::format("{}: {}", root, ec.message()));
  // What an interrupted download left behind.
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (entry.path().filename().string().rfind(kPartialPrefix, 0) == 0) fs::remove_all(entry.path(), ec);
  }
  const fs::path partial = fs::path(root) / fmt::format("{}{}-{}", kPartialPrefix, PayloadDirectoryName(pullspec), ::getpid());
  fs::create_directories(partial, ec);
  if (ec) return Status::IoError(fmt::format("{}: {}", partial.string(), ec.message()));
  auto fail = [&](Status s) {
    fs::remove_all(partial, ec);
    return s.WithContext(fmt::format("pulling {}", pullspec));
  };

  auto manifest = client.GetManifest(digest);
  if (!manifest.ok()) return fail(manifest.status());
  auto image = registry::InspectManifest(client, *manifest);
  if (!image.ok()) return fail(image.status());
  for (auto it = image->layers_top_first.rbegin(); it != image->layers_top_first.rend(); ++it) {  // lowest first
    if (stop.stop_requested()) return fail(Status::IoError("stopped"));
    auto blob = client.GetBlob(it->digest, it->size);
    if (!blob.ok()) return fail(blob.status());
    Status unpacked = registry::ExtractLayer(*blob, partial.string(), PayloadPath);
    if (!unpacked.ok()) return fail(unpacked.WithContext("layer " + it->digest));
  }
  Status synced = SyncTree(partial);
  if (!synced.ok()) return fail(synced);
  fs::rename(partial, target, ec);
  if (ec) return fail(Status::IoError(fmt::format("rename to {}: {}", target.string(), ec.message())));
  CINCINNATI_RETURN_IF_ERROR(SyncPath(root));
  return target.string();
}

Result<PayloadInfo> ReadPayload(const std::string& dir) {
  const fs::path root(dir);
  std::error_code ec;
  for (const char* sub : {"manifests", "release-manifests"}) {
    if (!fs::is_directory(root / sub, ec)) return Status::InvalidArgument(fmt::format("the payload has no {}/ directory", sub));
  }
  PayloadInfo info;
  info.dir = dir;
  const fs::path metadata_path = root / registry::kReleaseMetadataPath;
  if (!fs::is_regular_file(metadata_path, ec)) {
    return Status::InvalidArgument(fmt::format("the payload has no {}", registry::kReleaseMetadataPath));
  }
  CINCINNATI_ASSIGN_OR_RETURN(std::string metadata_text, graphdata::ReadFileToString(metadata_path.string()));
  auto metadata = ParseReleaseMetadata(metadata_text);
  if (!metadata.ok()) return metadata.status().WithContext(registry::kReleaseMetadataPath);
  info.metadata = std::move(metadata).value();

  const std::string references = "release-manifests/image-references";
  if (!fs::is_regular_file(root / references, ec)) return Status::InvalidArgument("the payload has no " + references);
  CINCINNATI_ASSIGN_OR_RETURN(std::string references_text, graphdata::ReadFileToString((root / references).string()));
  CINCINNATI_ASSIGN_OR_RETURN(JsonValue stream, YamlToJson(references_text, references));
  const JsonValue* kind = stream.Find("kind");
  if (!kind || !kind->is_string() || kind->text() != "ImageStream") {
    return Status::InvalidArgument(references + ": kind must be ImageStream");
  }
  const JsonValue* metadata_json = stream.Find("metadata");
  const JsonValue* name = metadata_json ? metadata_json->Find("name") : nullptr;
  const std::string version = info.metadata.version.ToString();
  if (!name || !name->is_string() || name->text() != version) {
    return Status::InvalidArgument(fmt::format("{}: metadata.name must be the release's version {}", references, version));
  }
  const JsonValue* spec = stream.Find("spec");
  const JsonValue* tags = spec ? spec->Find("tags") : nullptr;
  if (tags && tags->is_array()) {
    for (size_t i = 0; i < tags->items().size(); ++i) {
      const JsonValue& tag = tags->items()[i];
      const JsonValue* tag_name = tag.Find("name");
      const JsonValue* from = tag.Find("from");
      const JsonValue* pull = from ? from->Find("name") : nullptr;
      if (!tag_name || !tag_name->is_string() || !pull || !pull->is_string()) {
        return Status::InvalidArgument(fmt::format("{}: spec.tags[{}] needs name and from.name", references, i));
      }
      info.images[tag_name->text()] = pull->text();
    }
  }
  return info;
}

}  // namespace cincinnati::agent
