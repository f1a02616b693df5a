// Response helpers shared by the graph builder and policy engine routes.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/error_document.h"
#include "core/transform.h"
#include "http_server/http_types.h"
#include "http_server/metrics.h"
#include "service/http_names.h"
#include "service/view_cache.h"

namespace cincinnati::server {

// The {kind, value} body with its status; counts it in graph_response_errors_total.
Response ErrorResponse(const ErrorDocument& error, Family<Counter>& errors_total);

// A precomputed body: 304 when If-None-Match matches, gzip when accepted, with ETag
// and Vary: Accept-Encoding.
Response ViewResponse(const View& view, const Request& request, const std::string& content_type);
// The same, calling `before_body` (a caller's prefetch, say) before the body is
// assembled: only when a body is sent (not on a 304).
Response ViewResponse(const View& view, const Request& request, const std::string& content_type,
                      const std::function<void()>& before_body);

// Adds the reference's CORS headers (origin echoed) when the request has an Origin,
// and answers preflight OPTIONS requests. Returns true when `response` is complete.
bool HandleCors(const Request& request, Response& response);
void AddCorsHeaders(const Request& request, Response& response);
void AddCorsHeaders(const std::string* origin, Response& response);  // the request's Origin, if any
// A responder for answers that come later, from another thread: it keeps the Origin to
// echo, not the request.
std::function<void(Response)> WithCors(const Request& request, const std::function<void(Response)>& respond);

// missing_params naming the mandatory keys absent from the raw query (sorted, as the
// reference lists them), or nullopt when all are there.
std::optional<ErrorDocument> MissingParameters(const std::string& query, const std::vector<std::string>& mandatory);
// The same for a decoded query.
std::optional<ErrorDocument> MissingParameters(const Parameters& params, const std::vector<std::string>& mandatory);

// "/a//b/" -> "/a/b"; "" stays "" (routes at the root).
std::string NormalizePathPrefix(std::string_view prefix);

inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace cincinnati::server
