#include "operator/http_call.h"

#include <fmt/format.h>

#include "core/strings.h"
#include "http/client.h"
#include "kube/api_access.h"
#include "kube/json_value.h"

namespace cincinnati::upgrade {
namespace {
using kube::FindMember;
using kube::TextOf;

// What an error answer says: "message" (Kubernetes), "error" (Prometheus), else the text.
std::string ErrorText(const std::string& body) {
  auto json = kube::ParseJson(body);
  if (json.ok() && json->is_object()) {
    for (const char* key : {"message", "error"}) {
      const kube::JsonValue* v = FindMember(*json, key);
      if (v && v->is_string()) return TextOf(*v);
    }
  }
  std::string text(TrimWhitespace(body));
  if (text.size() > 300) text = text.substr(0, 300) + "...";
  return text;
}

// curl's words for a request that never left: no connection was made.
bool NeverSent(const std::string& error) {
  for (const char* said : {"Failed to connect", "Couldn't connect", "Could not connect", "Could not resolve", "Couldn't resolve",
                           "Connection refused", "cannot start a request"}) {
    if (error.find(said) != std::string::npos) return true;
  }
  return false;
}

// What a failed exchange is known to have done. A GET changes nothing; a command that
// got no answer may still have been delivered and applied (the peer or this process
// paused, a reset after the request was sent), so it is not called a failure to send.
std::string NoAnswer(const std::string& method, const std::string& url, const std::string& error) {
  if (method == "GET" || method == "HEAD" || NeverSent(error)) return fmt::format("{} {}: {}", method, url, error);
  return fmt::format("{} {}: no answer, the request may have been delivered (its outcome is unknown): {}", method, url, error);
}

}  // namespace

Result<std::string> CallPeer(const HttpPeer& peer, const std::string& method, const std::string& url, const std::string& body,
                             const std::string& content_type) {
  http::RequestOptions options;
  options.method = method;
  options.body = body;
  options.timeout = peer.timeout;
  options.ca_path = peer.ca_path;
  options.max_body_bytes = size_t{16} << 20;
  options.headers = peer.headers;
  if (!body.empty()) options.headers.push_back("Content-Type: " + content_type);
  if (!peer.token_file.empty()) {
    auto token = kube::ReadTokenFile(peer.token_file, "the token file");
    if (!token.ok()) return token.status().WithContext(fmt::format("{} {}", method, url));
    options.headers.push_back("Authorization: Bearer " + *token);
  }
  http::Result got = http::Request(url, options);
  if (!got.error.empty()) return Status::IoError(NoAnswer(method, url, got.error));
  if (!got.ok()) {
    const std::string text = ErrorText(got.body);
    return Status::IoError(fmt::format("{} {}: HTTP {}{}", method, url, got.status, text.empty() ? "" : ": " + text));
  }
  return got.body;
}

}  // namespace cincinnati::upgrade
