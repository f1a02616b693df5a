#include "registry/client.h"

#include <algorithm>
#include <condition_variable>
#include <regex>

#include <fmt/format.h>

#include "core/base64.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "registry/manifest.h"

namespace cincinnati::registry {
namespace {

std::string Describe(const http::Result& r) {
  // TLS spoken to a plain-HTTP registry: a host given without a scheme means https.
  if (r.error.find("https://") != std::string::npos &&
      (r.error.find("wrong version number") != std::string::npos ||
       r.error.find("packet length too long") != std::string::npos)) {
    return r.error + " (the registry does not speak TLS there: if it is plain HTTP, write it as http://HOST:PORT/...)";
  }
  if (!r.error.empty()) return r.error;
  std::string body = r.body.substr(0, 200);
  return fmt::format("HTTP {}{}{}", r.status, body.empty() ? "" : ": ", body);
}

// key="value" pairs of a WWW-Authenticate challenge.
std::map<std::string, std::string> ChallengeParams(const std::string& header) {
  std::map<std::string, std::string> out;
  std::regex re("(\\w+)=\"([^\"]*)\"");
  for (std::sregex_iterator it(header.begin(), header.end(), re), end; it != end; ++it) out[(*it)[1]] = (*it)[2];
  return out;
}

// Transport failures and 5xx may pass; an oversized body, a redirect loop or a
// cancelled request would only repeat.
bool Retryable(const http::Result& r) {
  switch (r.error_kind) {
    case http::ErrorKind::kBodyTooLarge:
    case http::ErrorKind::kRedirects:
    case http::ErrorKind::kCancelled:
      return false;
    default:
      return !r.error.empty() || r.status >= 500;
  }
}

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace

std::string Sha256Digest(const std::string& data) { return "sha256:" + Sha256Hex(data); }

bool VerifyDigest(const std::string& data, const std::string& digest) {
  if (digest.rfind("sha256:", 0) != 0) return false;
  return Sha256Hex(data) == digest.substr(7);
}

RegistryClient::RegistryClient(RepositoryLocation location, Credentials credentials, ClientOptions options)
    : location_(std::move(location)), credentials_(std::move(credentials)), options_(std::move(options)) {}

std::string RegistryClient::Url(const std::string& path) const {
  if (path.rfind("http://", 0) == 0 || path.rfind("https://", 0) == 0) return path;
  if (!path.empty() && path[0] == '/') return location_.base_url + path;
  return location_.base_url + "/v2/" + location_.repository + "/" + path;
}

bool RegistryClient::Authenticate(const http::Result& challenge, bool push) {
  const std::string* header = challenge.Header("WWW-Authenticate");
  if (header == nullptr) return false;
  std::string scheme = header->substr(0, header->find(' '));
  if (strcasecmp(scheme.c_str(), "Basic") == 0) {
    if (credentials_.empty()) return false;
    std::lock_guard<std::mutex> lock(mu_);
    authorization_ = "Basic " + Base64Encode(credentials_.username + ":" + credentials_.password);
    return true;
  }
  if (strcasecmp(scheme.c_str(), "Bearer") != 0) return false;
  auto params = ChallengeParams(*header);
  std::string scope = params.count("scope") ? params["scope"]
                                            : fmt::format("repository:{}:{}", location_.repository, push ? "pull,push" : "pull");
  std::string url = params["realm"] + "?scope=" + UrlEncode(scope);
  if (params.count("service")) url += "&service=" + UrlEncode(params["service"]);
  http::RequestOptions o{.timeout = options_.timeout, .ca_path = options_.ca_path, .max_redirects = options_.max_redirects,
                         .max_body_bytes = options_.max_document_bytes, .max_body_name = "max_document_bytes",
                         .stop = options_.stop};
  if (!credentials_.empty()) {
    o.headers.push_back("Authorization: Basic " + Base64Encode(credentials_.username + ":" + credentials_.password));
  }
  http::Result r = http::Request(url, o);
  if (!r.ok()) return false;
  auto token = ParseTokenResponse(r.body);
  if (!token.ok()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  authorization_ = "Bearer " + *token;
  return true;
}

http::Result RegistryClient::Send(const Call& call) {
  const std::string url = Url(call.url);
  // Credentials stay on the registry's origin: a Link or Location elsewhere gets none.
  const bool own_origin = http::SameOrigin(url, location_.base_url);
  http::RequestOptions o{.method = call.method, .body = call.body, .timeout = options_.timeout, .accept_gzip = false,
                         .ca_path = options_.ca_path, .max_redirects = options_.max_redirects,
                         .max_body_bytes = call.max_body_bytes.value_or(options_.max_document_bytes),
                         .max_body_name = call.max_body_bytes ? call.max_body_name : "max_document_bytes",
                         .stop = options_.stop};
  for (int round = 0; round < 2; ++round) {
    o.headers = call.headers;
    if (own_origin) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!authorization_.empty()) o.headers.push_back("Authorization: " + authorization_);
    }
    http::Result r = http::Request(url, o);
    // Only the registry's own challenge is answered, not one from storage it redirected to.
    bool challenge = r.status == 401 && own_origin && http::SameOrigin(r.url, location_.base_url);
    if (!challenge || round == 1 || !Authenticate(r, call.push)) return r;
  }
  return {};
}

bool RegistryClient::PauseBeforeRetry() const {
  std::mutex mu;
  std::condition_variable_any wake;
  std::unique_lock<std::mutex> lock(mu);
  wake.wait_for(lock, options_.stop, options_.retry_pause, [] { return false; });
  return !options_.stop.stop_requested();
}

http::Result RegistryClient::SendWithRetries(const Call& call) {
  http::Result r;
  for (int attempt = 1; attempt <= options_.attempts; ++attempt) {
    r = Send(call);
    if (!Retryable(r) || attempt == options_.attempts || !PauseBeforeRetry()) return r;
  }
  return r;
}

Result<std::vector<std::string>> RegistryClient::ListTags(size_t page_size) {
  std::vector<std::string> tags;
  std::string next = fmt::format("tags/list?n={}", page_size);
  while (!next.empty()) {
    http::Result r = SendWithRetries({.url = next, .headers = {"Accept: application/json"}});
    if (!r.ok()) return Status::IoError(fmt::format("listing tags of {}: {}", location_.repository, Describe(r)));
    CINCINNATI_ASSIGN_OR_RETURN(std::vector<std::string> page, ParseTagList(r.body));
    tags.insert(tags.end(), std::make_move_iterator(page.begin()), std::make_move_iterator(page.end()));
    next.clear();
    if (const std::string* link = r.Header("Link")) {
      // <...?n=20&last=x>; rel="next": the next page, relative to the registry.
      size_t open = link->find('<'), close = link->find('>');
      if (open != std::string::npos && close != std::string::npos && link->find("rel=\"next\"") != std::string::npos) {
        next = link->substr(open + 1, close - open - 1);
      }
    }
  }
  return tags;
}

Result<Manifest> RegistryClient::GetManifest(const std::string& reference) {
  http::Result r = SendWithRetries(
      {.url = "manifests/" + reference,
       .headers = {fmt::format("Accept: {}, {}, {}, {}", kDockerManifest, kDockerManifestList, kOciManifest, kOciIndex)}});
  if (!r.ok()) return Status::IoError(fmt::format("manifest {}:{}: {}", location_.repository, reference, Describe(r)));
  Manifest m;
  if (const std::string* type = r.Header("Content-Type")) m.media_type = type->substr(0, type->find(';'));
  m.body = std::move(r.body);
  // Asked for by digest: what came must be exactly that (a tampering registry or proxy
  // cannot substitute another image under a pinned digest).
  if (reference.rfind("sha256:", 0) == 0 && !VerifyDigest(m.body, reference)) {
    return Status::InvalidArgument(fmt::format("manifest {}@{}: the registry's answer has digest {}, not the one asked for",
                                               location_.repository, reference, Sha256Digest(m.body)));
  }
  if (const std::string* digest = r.Header("Docker-Content-Digest")) {
    m.digest = *digest;
    m.digest_from_header = true;
  } else {
    m.digest = Sha256Digest(m.body);
  }
  return m;
}

Result<std::string> RegistryClient::GetBlob(const std::string& digest, std::optional<uint64_t> size) {
  Call call{.url = "blobs/" + digest, .max_body_bytes = static_cast<size_t>(options_.max_blob_bytes),
            .max_body_name = "max_blob_bytes"};
  if (size && *size <= options_.max_blob_bytes) {
    call.max_body_bytes = static_cast<size_t>(*size);
    call.max_body_name = "the size in its descriptor";
  }
  http::Result r;
  for (int attempt = 1; attempt <= options_.attempts; ++attempt) {
    r = Send(call);
    if (r.ok() && VerifyDigest(r.body, digest)) return std::move(r.body);
    if (r.ok()) r.error = fmt::format("content does not match digest {}", digest);
    if (!Retryable(r) || attempt == options_.attempts || !PauseBeforeRetry()) break;
  }
  return Status::IoError(fmt::format("blob {} of {}: {}", digest, location_.repository, Describe(r)));
}

Result<bool> RegistryClient::HasBlob(const std::string& digest) {
  http::Result r = Send({.method = "HEAD", .url = "blobs/" + digest, .push = true});
  if (!r.error.empty()) return Status::IoError(r.error);
  return r.status == 200;
}

Result<std::string> RegistryClient::PushBlob(const std::string& data, size_t chunk_size) {
  std::string digest = Sha256Digest(data);
  if (auto has = HasBlob(digest); has.ok() && *has) return digest;
  http::Result start = Send({.method = "POST", .url = "blobs/uploads/", .headers = {"Content-Length: 0"}, .push = true});
  const std::string* location = start.Header("Location");
  if (start.status != 202 || location == nullptr) {
    return Status::IoError(fmt::format("starting upload to {}: {}", location_.repository, Describe(start)));
  }
  std::string upload = *location;
  if (chunk_size > 0) {
    for (size_t offset = 0; offset < data.size(); offset += chunk_size) {
      std::string chunk = data.substr(offset, chunk_size);
      http::Result r = Send({.method = "PATCH",
                             .url = upload,
                             .headers = {"Content-Type: application/octet-stream",
                                         fmt::format("Content-Range: {}-{}", offset, offset + chunk.size() - 1)},
                             .body = chunk,
                             .push = true});
      if (r.status != 202 || !r.Header("Location")) {
        return Status::IoError(fmt::format("uploading a chunk to {}: {}", location_.repository, Describe(r)));
      }
      upload = *r.Header("Location");
    }
  }
  upload += (upload.find('?') == std::string::npos ? "?" : "&") + ("digest=" + UrlEncode(digest));
  http::Result done = Send({.method = "PUT",
                            .url = upload,
                            .headers = {"Content-Type: application/octet-stream"},
                            .body = chunk_size > 0 ? std::string() : data,
                            .push = true});
  if (done.status != 201) return Status::IoError(fmt::format("finishing upload to {}: {}", location_.repository, Describe(done)));
  return digest;
}

Result<std::string> RegistryClient::PushManifest(const std::string& reference, const std::string& media_type,
                                                 const std::string& body) {
  http::Result r =
      Send({.method = "PUT", .url = "manifests/" + reference, .headers = {"Content-Type: " + media_type}, .body = body,
            .push = true});
  if (r.status != 201) return Status::IoError(fmt::format("pushing manifest {}:{}: {}", location_.repository, reference, Describe(r)));
  const std::string* digest = r.Header("Docker-Content-Digest");
  return digest ? *digest : Sha256Digest(body);
}

}  // namespace cincinnati::registry
