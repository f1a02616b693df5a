#include "http/client.h"

#include <curl/curl.h>
#include <strings.h>

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "env/clock.h"
#include "http/transfer.h"

namespace cincinnati::http {
namespace {

struct Origin {
  std::string scheme, host, port;
  bool operator==(const Origin&) const = default;
};

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::optional<Origin> OriginOf(const std::string& url) {
  CURLU* u = curl_url();
  if (!u) return std::nullopt;
  std::optional<Origin> out;
  if (curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    char *scheme = nullptr, *host = nullptr, *port = nullptr;
    if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
      out = Origin{Lower(scheme), Lower(host), port};
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
  }
  curl_url_cleanup(u);
  return out;
}

bool IsRedirect(long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

bool IsHttpUrl(const std::string& url) {
  std::string scheme = Lower(url.substr(0, url.find(':')));
  return scheme == "http" || scheme == "https";
}

// The request's headers for `url`: without Authorization when `url` is not on the
// origin the caller asked for (a redirect to storage must not receive the credentials).
std::vector<std::string> HeadersFor(const std::vector<std::string>& headers, bool same_origin) {
  if (same_origin) return headers;
  std::vector<std::string> out;
  for (const std::string& h : headers) {
    if (strncasecmp(h.c_str(), "Authorization:", 14) != 0) out.push_back(h);
  }
  return out;
}

std::string Chain(const std::vector<std::string>& urls) {
  std::string out;
  for (const std::string& u : urls) out += (out.empty() ? "" : " -> ") + u;
  return out;
}

Result Failure(ErrorKind kind, std::string message, Result partial = {}) {
  partial.error_kind = kind;
  partial.error = std::move(message);
  partial.status = 0;
  return partial;
}

// Why following `next` after `visited` is refused; nullopt when it may be followed.
std::optional<std::string> RedirectRefusal(const std::vector<std::string>& visited, const std::string& next,
                                           int max_redirects) {
  const std::string& first = visited.front();
  if (std::find(visited.begin(), visited.end(), next) != visited.end()) {
    return fmt::format("redirect loop for url ({}): {} -> {}", first, Chain(visited), next);
  }
  if (static_cast<int>(visited.size()) > max_redirects) {
    return fmt::format("too many redirects for url ({}): more than {}, last to {}", first, max_redirects, next);
  }
  if (!IsHttpUrl(next)) return fmt::format("redirect from url ({}) to a non-HTTP url ({})", visited.back(), next);
  return std::nullopt;
}

}  // namespace

bool CaseInsensitiveLess::operator()(std::string_view a, std::string_view b) const {
  size_t n = std::min(a.size(), b.size());
  int c = ::strncasecmp(a.data(), b.data(), n);
  return c != 0 ? c < 0 : a.size() < b.size();
}

const std::string* Result::Header(std::string_view name) const {
  auto it = headers.find(std::string(name));
  return it == headers.end() ? nullptr : &it->second;
}

bool SameOrigin(const std::string& a, const std::string& b) {
  auto x = OriginOf(a), y = OriginOf(b);
  return x && y && *x == *y;
}

Result Request(const std::string& url, const RequestOptions& options) {
  // The real clock: each hop's transfer is bounded by curl in real time.
  const auto deadline = env::RealClock().Steady() + options.timeout;
  internal::Hop hop{.url = url, .method = options.head ? "HEAD" : options.method, .body = &options.body};
  std::vector<std::string> visited{url};
  Result result;
  while (true) {
    if (options.stop.stop_requested()) {
      return Failure(ErrorKind::kCancelled, fmt::format("request for url ({}) cancelled", hop.url), std::move(result));
    }
    hop.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - env::RealClock().Steady());
    if (hop.timeout.count() <= 0) {
      return Failure(ErrorKind::kTransport, fmt::format("error sending request for url ({}): timed out after {} ms",
                                                        hop.url, options.timeout.count()), std::move(result));
    }
    hop.headers = HeadersFor(options.headers, hop.url == url || SameOrigin(hop.url, url));
    internal::HopResult answer = internal::PerformHop(hop, options);
    result.new_connections += answer.new_connections;
    result.url = hop.url;
    if (!answer.error.empty()) return Failure(answer.error_kind, std::move(answer.error), std::move(result));
    result.status = answer.status;
    result.headers = std::move(answer.headers);
    result.body = std::move(answer.body);
    if (!IsRedirect(answer.status) || options.max_redirects <= 0 || !result.Header("Location")) return result;
    if (answer.redirect_url.empty()) {
      return Failure(ErrorKind::kRedirects, fmt::format("redirect from url ({}) to an unusable Location '{}'", hop.url,
                                                        *result.Header("Location")), std::move(result));
    }
    if (auto refusal = RedirectRefusal(visited, answer.redirect_url, options.max_redirects)) {
      return Failure(ErrorKind::kRedirects, std::move(*refusal), std::move(result));
    }
    bool to_get = answer.status == 303 || ((answer.status == 301 || answer.status == 302) && hop.method == "POST");
    if (to_get && hop.method != "HEAD") {
      hop.method = "GET";
      hop.body = nullptr;
    }
    hop.url = answer.redirect_url;
    visited.push_back(hop.url);
    ++result.redirects;
  }
}

Result Get(const std::string& url, const GetOptions& options) {
  return Request(url, {.headers = options.headers,
                       .timeout = options.timeout,
                       .accept_gzip = options.accept_gzip,
                       .max_body_bytes = options.max_body_bytes,
                       .max_body_name = options.max_body_name,
                       .stop = options.stop});
}

}  // namespace cincinnati::http
