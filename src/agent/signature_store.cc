#include "agent/signature_store.h"

#include <fmt/format.h>

#include <filesystem>

#include "env/file_system.h"
#include "http/client.h"
#include "registry/signature.h"

namespace cincinnati::agent {
namespace {

namespace fs = std::filesystem;

class HttpSignatureStore : public SignatureStoreReader {
 public:
  HttpSignatureStore(std::string url, std::string ca_path) : url_(std::move(url)), ca_path_(std::move(ca_path)) {}
  const std::string& url() const override { return url_; }

  SignatureFetch Fetch(const std::string& digest, int index, std::chrono::milliseconds timeout,
                       std::stop_token stop) const override {
    const std::string location = registry::SignatureLocation(url_, digest, index);
    http::RequestOptions options;
    options.timeout = timeout;
    options.ca_path = ca_path_;
    options.max_body_bytes = kMaxSignatureBytes;
    options.max_body_name = "the signature size limit";
    options.stop = stop;
    http::Result r = http::Request(location, options);
    if (r.status == 404) return {SignatureFetch::Kind::kNone, "", ""};
    if (!r.error.empty()) return {SignatureFetch::Kind::kError, "", r.error};
    if (!r.ok()) return {SignatureFetch::Kind::kError, "", fmt::format("{}: HTTP status {}", location, r.status)};
    return {SignatureFetch::Kind::kFound, std::move(r.body), ""};
  }

 private:
  std::string url_, ca_path_;
};

class FileSignatureStore : public SignatureStoreReader {
 public:
  FileSignatureStore(std::string url, std::string dir) : url_(std::move(url)), dir_(std::move(dir)) {}
  const std::string& url() const override { return url_; }

  SignatureFetch Fetch(const std::string& digest, int index, std::chrono::milliseconds, std::stop_token) const override {
    const fs::path path = registry::SignatureLocation(dir_, digest, index);
    auto body = env::ReadFile(path, kMaxSignatureBytes);
    if (!body.ok()) {
      if (body.status().code() == Status::Code::kNotFound) return {SignatureFetch::Kind::kNone, "", ""};
      if (body.status().code() == Status::Code::kTooLarge) {
        return {SignatureFetch::Kind::kError, "",
                fmt::format("{}: more than a signature may have ({} bytes)", path.string(), kMaxSignatureBytes)};
      }
      return {SignatureFetch::Kind::kError, "", body.status().message()};
    }
    return {SignatureFetch::Kind::kFound, std::move(body).value(), ""};
  }

 private:
  std::string url_, dir_;
};

}  // namespace

Result<std::unique_ptr<SignatureStoreReader>> OpenSignatureStore(const std::string& url, const std::string& ca_path) {
  if (url.rfind("https://", 0) == 0 || url.rfind("http://", 0) == 0) {
    return std::unique_ptr<SignatureStoreReader>(new HttpSignatureStore(url, ca_path));
  }
  if (url.rfind("file://", 0) == 0) {
    std::string dir = url.substr(7);
    if (dir.empty() || dir[0] != '/') {
      return Status::InvalidArgument(fmt::format("signature store {}: a file:// store needs an absolute path", url));
    }
    return std::unique_ptr<SignatureStoreReader>(new FileSignatureStore(url, std::move(dir)));
  }
  return Status::InvalidArgument(fmt::format("signature store {}: the scheme must be https, http or file", url));
}

}  // namespace cincinnati::agent
