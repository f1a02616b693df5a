// The HTTP server library (http_server/) in the services' words: the services answer
// Requests with Responses, so their code says `Response`, not `http_server::Response`.
#pragma once

#include "http_server/content_negotiation.h"
#include "http_server/gzip.h"
#include "http_server/http_server.h"
#include "http_server/http_types.h"
#include "http_server/metrics.h"
#include "http_server/query.h"

namespace cincinnati::server {

// The number of the graph an answer comes from (signing/graph_generation.h): a graph builder
// sends it with every graph, a policy engine with its signed answers.
inline constexpr char kGenerationHeader[] = "Cincinnati-Graph-Generation";
// When the graph's source last vouched for it (Unix seconds): a graph builder's last
// successful refresh, passed down a chain of policy engines (signing/answer_signer.h).
inline constexpr char kFreshHeader[] = "Cincinnati-Graph-Fresh";

using http_server::AcceptsGzip;
using http_server::AsyncHandler;
using http_server::Counter;
using http_server::EncodeQuery;
using http_server::EscapeLabel;
using http_server::Family;
using http_server::FileBody;
using http_server::FormatValue;
using http_server::Gauge;
using http_server::GzipCompress;
using http_server::Handler;
using http_server::Headers;
using http_server::Histogram;
using http_server::HttpServer;
using http_server::kApplicationJson;
using http_server::kCincinnatiV1;
using http_server::MetricType;
using http_server::NegotiateContentType;
using http_server::ParseQuery;
using http_server::PercentDecode;
using http_server::QueryHasKey;
using http_server::Registry;
using http_server::RenderAll;
using http_server::Request;
using http_server::Response;
using http_server::ServerLimits;

}  // namespace cincinnati::server
