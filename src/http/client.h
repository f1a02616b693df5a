// HTTP client (libcurl): one blocking request, any method, with a body and headers.
// Used by the policy engine for its upstream, by the registry client, and by tests.
//
// Contract:
// - Thread-safety: Request() and Get() may be called from any number of threads at
//   once. Each thread keeps its own curl handle, so requests made one after another on
//   a thread reuse its open connections to the same scheme://host:port (keep-alive; up
//   to 5 idle connections per thread, one idle for 30 s is not reused, all close when
//   the thread exits).
//   Nothing is shared between threads except the read-only CA bundles.
// - Timeouts: `timeout` bounds the whole request, redirects included.
// - Redirects: 301, 302, 303, 307 and 308 with a Location are followed, at most
//   `max_redirects` times (0: the 3xx answer is returned as it is). A 303, and a 301
//   or 302 after a POST, continue with GET and no body; the others keep the method and
//   body. The Authorization header is sent only to the origin (scheme, host and port)
//   of the URL asked for, never to a host it redirects to. A loop or one redirect too
//   many is an error naming the URLs (ErrorKind::kRedirects).
// - Limits: a response body (decoded, of any hop) longer than `max_body_bytes` aborts
//   the transfer as soon as it is exceeded; the error names the URL and the limit
//   (ErrorKind::kBodyTooLarge).
// - Cancellation: once `stop` is requested the request ends within about a second
//   (curl checks it at least once a second), with ErrorKind::kCancelled.
// - Errors: nothing throws; failures are in Result::error, which names the URL.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace cincinnati::http {

struct CaseInsensitiveLess {
  bool operator()(std::string_view a, std::string_view b) const;
};
using Headers = std::map<std::string, std::string, CaseInsensitiveLess>;

// Large enough for any graph document seen so far (10,000 releases serialize to 10 MB),
// small enough that a hostile or broken server cannot exhaust memory.
inline constexpr size_t kDefaultMaxBodyBytes = size_t{64} << 20;
inline constexpr int kDefaultMaxRedirects = 5;

struct RequestOptions {
  std::string method = "GET";
  std::vector<std::string> headers{};  // "Name: value"
  std::string body{};                // sent when non-empty or for PUT/POST/PATCH
  std::chrono::milliseconds timeout{30000};
  bool accept_gzip = true;           // sends Accept-Encoding and decodes the body
  // Extra trust: *.pem and *.crt files up to two levels under this directory, added to
  // the system's certificate bundle (the reference's root_certificate_dir).
  std::string ca_path{};
  bool head = false;                 // HEAD: no body expected
  int max_redirects = kDefaultMaxRedirects;
  size_t max_body_bytes = kDefaultMaxBodyBytes;
  // What `max_body_bytes` is, for the error message ("the blob's descriptor size").
  std::string max_body_name = "the default response limit";
  std::stop_token stop{};            // no stop state: not cancellable
};

enum class ErrorKind {
  kNone,          // a response arrived
  kTransport,     // connection, TLS, protocol or timeout failure
  kBodyTooLarge,  // the body exceeded max_body_bytes
  kRedirects,     // a redirect loop, one redirect too many, or a bad Location
  kCancelled,     // `stop` was requested
};

struct Result {
  long status = 0;     // 0 when no response arrived
  std::string error;   // empty when a response arrived
  ErrorKind error_kind = ErrorKind::kNone;
  Headers headers;     // last value of each header of the final response
  std::string body;
  std::string url;     // of the final response, after redirects
  int redirects = 0;   // followed
  long new_connections = 0;  // opened for this request (0: all reused)
  bool ok() const { return error.empty() && status >= 200 && status < 300; }
  const std::string* Header(std::string_view name) const;
};

Result Request(const std::string& url, const RequestOptions& options = {});

// GET with headers; the policy engine's and the tests' common case.
struct GetOptions {
  std::vector<std::string> headers{};
  std::chrono::milliseconds timeout{30000};
  bool accept_gzip = true;
  size_t max_body_bytes = kDefaultMaxBodyBytes;
  std::string max_body_name = "the default response limit";
  std::stop_token stop{};
};
Result Get(const std::string& url, const GetOptions& options = {});

// Whether two absolute URLs have the same scheme, host and port (the default port of
// the scheme when none is written). False when either cannot be parsed.
bool SameOrigin(const std::string& a, const std::string& b);

}  // namespace cincinnati::http
