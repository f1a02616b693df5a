#include "service/responses.h"

#include <algorithm>

#include "core/strings.h"
#include "http_server/content_negotiation.h"
#include "http_server/query.h"
#include "service/http_names.h"

namespace cincinnati::server {
namespace {

bool MatchesIfNoneMatch(const std::string* header, const std::string& etag) {
  if (header == nullptr) return false;
  for (std::string_view tag : Split(*header, ',')) {
    tag = TrimWhitespace(tag);
    if (tag == "*") return true;
    if (tag.substr(0, 2) == "W/") tag.remove_prefix(2);  // weak comparison
    if (tag == etag) return true;
  }
  return false;
}

}  // namespace

Response ErrorResponse(const ErrorDocument& error, Family<Counter>& errors_total) {
  errors_total.With({std::to_string(error.http_status), error.kind}).Increment();
  return Response::Text(error.http_status, error.ToJson(), "application/json");
}

Response ViewResponse(const View& view, const Request& request, const std::string& content_type) {
  return ViewResponse(view, request, content_type, {});
}

Response ViewResponse(const View& view, const Request& request, const std::string& content_type,
                      const std::function<void()>& before_body) {
  bool gzip = AcceptsGzip(request.Header("Accept-Encoding"));
  const std::string& etag = gzip ? view.gzip_etag() : view.etag();
  Response r;
  r.headers["Content-Type"] = content_type;
  r.headers["ETag"] = etag;
  r.headers["Vary"] = "Accept-Encoding";
  if (MatchesIfNoneMatch(request.Header("If-None-Match"), etag)) {
    r.status = 304;
    return r;
  }
  r.status = 200;
  if (before_body) before_body();
  View::Parts parts = gzip ? view.GzipParts() : view.BodyParts();
  if (gzip) r.headers["Content-Encoding"] = "gzip";
  r.body = std::move(parts.head);
  r.body_tail = std::move(parts.tail);
  r.file = gzip ? view.GzipFile() : view.BodyFile();
  return r;
}

void AddCorsHeaders(const Request& request, Response& response) { AddCorsHeaders(request.Header("Origin"), response); }

void AddCorsHeaders(const std::string* origin, Response& response) {
  if (origin == nullptr) return;
  response.headers["Access-Control-Allow-Origin"] = *origin;
  auto& vary = response.headers["Vary"];
  vary = vary.empty() ? "Origin" : vary + ", Origin";
}

std::function<void(Response)> WithCors(const Request& request, const std::function<void(Response)>& respond) {
  std::optional<std::string> origin;
  if (const std::string* o = request.Header("Origin")) origin = *o;
  return [origin = std::move(origin), respond](Response r) {
    AddCorsHeaders(origin ? &*origin : nullptr, r);
    respond(std::move(r));
  };
}

bool HandleCors(const Request& request, Response& response) {
  if (request.method != "OPTIONS" || request.Header("Origin") == nullptr ||
      request.Header("Access-Control-Request-Method") == nullptr) {
    return false;
  }
  response = Response::Empty(200);
  AddCorsHeaders(request, response);
  response.headers["Access-Control-Allow-Methods"] = "GET, HEAD";
  if (const std::string* h = request.Header("Access-Control-Request-Headers")) {
    response.headers["Access-Control-Allow-Headers"] = *h;
  }
  response.headers["Access-Control-Max-Age"] = "3600";
  return true;
}

namespace {

std::optional<ErrorDocument> Missing(std::vector<std::string> missing) {
  if (missing.empty()) return std::nullopt;
  std::sort(missing.begin(), missing.end());
  std::string list;
  for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
  return ErrorDocument::Of("missing_params", list);
}

}  // namespace

std::optional<ErrorDocument> MissingParameters(const std::string& query, const std::vector<std::string>& mandatory) {
  std::vector<std::string> missing;
  for (const std::string& key : mandatory) {
    if (!QueryHasKey(query, key)) missing.push_back(key);
  }
  return Missing(std::move(missing));
}

std::optional<ErrorDocument> MissingParameters(const Parameters& params, const std::vector<std::string>& mandatory) {
  std::vector<std::string> missing;
  for (const std::string& key : mandatory) {
    if (!params.count(key)) missing.push_back(key);
  }
  return Missing(std::move(missing));
}

std::string NormalizePathPrefix(std::string_view prefix) {
  std::string out;
  for (std::string_view part : Split(prefix, '/')) {
    if (part.empty()) continue;
    out += '/';
    out += part;
  }
  return out;
}

}  // namespace cincinnati::server
