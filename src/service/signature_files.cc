#include "service/signature_files.h"

#include <fmt/format.h>

#include <filesystem>
#include "env/file_system.h"

#include "service/responses.h"

namespace cincinnati::server {
namespace {

namespace fs = std::filesystem;
constexpr uintmax_t kMaxSignatureFileBytes = 1 << 20;

bool SafeName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace

SignatureFiles::SignatureFiles(std::string dir, std::string path_prefix)
    : dir_(std::move(dir)), route_(std::move(path_prefix) + "/signatures/") {}

std::optional<Response> SignatureFiles::Handle(const Request& request, Family<Counter>& errors_total) const {
  if (request.path.rfind(route_, 0) != 0) return std::nullopt;
  if (request.method != "GET" && request.method != "HEAD") return Response::Empty(405);
  std::string_view rest = std::string_view(request.path).substr(route_.size());
  const size_t slash = rest.find('/');
  std::string_view segment = rest.substr(0, slash);
  std::string_view signature = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  const size_t eq = segment.find('=');
  if (eq == std::string_view::npos || segment.find('=', eq + 1) != std::string_view::npos) {
    return ErrorResponse(ErrorDocument::Of("invalid_params", fmt::format("expected ALGO=DIGEST, got '{}'", segment)),
                         errors_total);
  }
  std::string_view algo = segment.substr(0, eq), digest = segment.substr(eq + 1);
  if (algo != "sha" && algo != "sha256") {
    return ErrorResponse(ErrorDocument::Of("invalid_params", fmt::format("algo not supported: {}", algo)), errors_total);
  }
  const std::string what = fmt::format("signature {}={}/{}", algo, digest, signature);
  if (!SafeName(digest) || !SafeName(signature)) return ErrorResponse(ErrorDocument::Of("does_not_exist", what), errors_total);
  const fs::path path = fs::path(dir_) / algo / digest / signature;
  // Missing, not a regular file, over the limit or unreadable: all the same to a client.
  auto body = env::DefaultFileSystem().ReadFile(path, kMaxSignatureFileBytes);
  if (!body.ok()) return ErrorResponse(ErrorDocument::Of("does_not_exist", what), errors_total);
  Response r = Response::Text(200, std::move(body).value(), "application/octet-stream");
  AddCorsHeaders(request, r);
  return r;
}

}  // namespace cincinnati::server
