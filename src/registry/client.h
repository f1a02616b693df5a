// RegistryClient: the Docker Registry HTTP API v2 / OCI distribution API for one
// repository.
//
// Authentication follows the registry's challenge: with no credentials it tries
// anonymously, and on a 401 it gets a bearer token for the repository scope (or sends
// basic credentials when the registry asks for Basic). Credentials and tokens go only
// to the registry's own origin: not to a host a blob download redirects to (object
// storage), nor to a pagination or upload URL elsewhere, and a 401 from such a host
// starts no authentication. Reads are retried (3 attempts, 1 s apart) on transport
// errors and 5xx, never on a body over its limit, a redirect loop or cancellation.
// Response bodies are capped: documents (manifests, tag pages, tokens) at
// max_document_bytes, a blob at its descriptor's size (at most max_blob_bytes); blobs
// are verified against their digest. Uploads are monolithic, or chunked (PATCH) when
// a chunk size is given. Once `stop` is requested every call returns promptly with an
// error. Thread-safety: all methods may be called from several threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "core/status.h"
#include "http/client.h"
#include "registry/reference.h"

namespace cincinnati::registry {

inline constexpr const char* kDockerManifest = "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr const char* kDockerManifestList = "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr const char* kOciManifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr const char* kOciIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr const char* kDockerConfig = "application/vnd.docker.container.image.v1+json";
inline constexpr const char* kDockerLayerGzip = "application/vnd.docker.image.rootfs.diff.tar.gzip";

struct Credentials {
  std::string username;
  std::string password;
  bool empty() const { return username.empty() && password.empty(); }
};

struct ClientOptions {
  std::chrono::milliseconds timeout{60000};
  int attempts = 3;
  std::chrono::milliseconds retry_pause{1000};
  std::string ca_path{};  // extra trusted certificates (a directory)
  int max_redirects = http::kDefaultMaxRedirects;
  // The registry's own manifest limit is 4 MiB; tag pages and tokens are far smaller.
  size_t max_document_bytes = size_t{4} << 20;
  // Any blob, whatever its descriptor says (release payload layers are tens of MiB).
  uint64_t max_blob_bytes = uint64_t{1} << 30;
  std::stop_token stop{};  // cancels requests and retry pauses
};

struct Manifest {
  std::string media_type;
  std::string body;
  std::string digest;  // Docker-Content-Digest, or computed when absent
  bool digest_from_header = false;
};

class RegistryClient {
 public:
  RegistryClient(RepositoryLocation location, Credentials credentials = {}, ClientOptions options = {});

  const RepositoryLocation& location() const { return location_; }

  // Every tag, following Link pagination with `page_size` tags per request.
  Result<std::vector<std::string>> ListTags(size_t page_size = 20);
  // By digest ("sha256:..."): the answer must hash to it, else an error.
  Result<Manifest> GetManifest(const std::string& reference);
  // `size`: the descriptor's; a longer body is refused as soon as it exceeds it.
  Result<std::string> GetBlob(const std::string& digest, std::optional<uint64_t> size = std::nullopt);
  Result<bool> HasBlob(const std::string& digest);
  // Uploads `data` (skipped when the registry has it). chunk_size 0: one request.
  Result<std::string> PushBlob(const std::string& data, size_t chunk_size = 0);
  // Returns the manifest digest.
  Result<std::string> PushManifest(const std::string& reference, const std::string& media_type,
                                   const std::string& body);

 private:
  // One request with authentication; `url` is absolute or a path under /v2/<repo>/.
  struct Call {
    std::string method = "GET";
    std::string url{};  // absolute, or a path under /v2/<repo>/
    std::vector<std::string> headers{};
    std::string body{};
    bool push = false;
    std::optional<size_t> max_body_bytes{};  // none: max_document_bytes
    std::string max_body_name{};
  };
  http::Result Send(const Call& call);
  http::Result SendWithRetries(const Call& call);
  // Sleeps between attempts; false when stopped meanwhile.
  bool PauseBeforeRetry() const;
  bool Authenticate(const http::Result& challenge, bool push);
  std::string Url(const std::string& path) const;

  RepositoryLocation location_;
  Credentials credentials_;
  ClientOptions options_;
  std::mutex mu_;
  std::string authorization_;  // "Bearer ..." or "Basic ..." once known
};

std::string Sha256Digest(const std::string& data);  // "sha256:<hex>"
bool VerifyDigest(const std::string& data, const std::string& digest);

}  // namespace cincinnati::registry
