// The policy engine's `{prefix}/v1/path` and `{prefix}/v1/explain` (see
// policy_engine_service.h and insight/queries.h).
#include <fmt/format.h>

#include "http_server/query.h"
#include "insight/queries.h"
#include "policy_engine/policy_engine_service.h"
#include "service/http_names.h"
#include "service/responses.h"

namespace cincinnati::server {

std::optional<Response> PolicyEngineService::ServeInsight(const Request& request, bool path, const Respond& respond) {
  if (request.method != "GET" && request.method != "HEAD") return Response::Empty(405);
  incoming_requests_.With({request.path}).Increment();
  auto params = ParseQuery(request.query);
  if (!params.ok()) return ErrorResponse(ErrorDocument::FromStatus(params.status()), response_errors_);
  if (!ServesSharedGraph(feed_.state())) {
    return ErrorResponse(
        ErrorDocument::Of("failed_upstream_fetch",
                          fmt::format("paths and explanations need the graph builder's graph; this policy engine "
                                      "forwards queries to another policy engine ({}): ask that one",
                                      options_.upstream.url)),
        response_errors_);
  }
  // Hotfix entitlements come from the cluster directory, as for the graph itself.
  std::optional<std::string> id;
  if (auto it = params->find("id"); lookups_.enabled() && answers_.hotfixes() && it != params->end() && !it->second.empty()) {
    id = it->second;
  }
  return WithCluster(request, id, respond, nullptr,
                     [this, copy = request, path, params = std::move(params).value()](
                         const std::optional<directory::DirectoryAnswer>& cluster) {
                       return AnswerInsight(copy, path, params, cluster);
                     });
}

Response PolicyEngineService::AnswerInsight(const Request& request, bool path, const Parameters& params,
                                            const std::optional<directory::DirectoryAnswer>& cluster) {
  std::shared_ptr<const Graph> graph = answers_.insight_graph();
  if (!graph) return ErrorResponse(feed_.NoGraphError(), response_errors_);
  const bool found = cluster && lookups_.Record(*cluster);
  std::shared_ptr<const policy::HotfixIndex> hotfixes = answers_.hotfixes();
  // Per channel: a path may cross several.
  auto entitle = [&](std::string_view channel) {
    ClusterEntitlements e;
    if (found && hotfixes) e.hotfixes = hotfixes->Entitled(cluster->cluster, channel);
    return e;
  };
  std::string json, text;
  if (path) {
    auto query = insight::ParsePathQuery(params);
    if (!query.ok()) return ErrorResponse(ErrorDocument::FromStatus(query.status()), response_errors_);
    auto answer = insight::PlanPaths(chain_, *graph, *query, entitle);
    if (!answer.ok()) return ErrorResponse(ErrorDocument::FromStatus(answer.status()), response_errors_);
    json = insight::PathJson(*answer);
    text = insight::PathText(*answer);
  } else {
    auto query = insight::ParseExplainQuery(params);
    if (!query.ok()) return ErrorResponse(ErrorDocument::FromStatus(query.status()), response_errors_);
    query->entitlements = entitle(query->parameters.at("channel"));
    auto answer = insight::Explain(chain_, *graph, *query);
    if (!answer.ok()) return ErrorResponse(ErrorDocument::FromStatus(answer.status()), response_errors_);
    json = insight::ExplanationJson(*answer);
    text = insight::ExplanationText(*answer);
  }
  const std::string* accept = request.Header("Accept");
  if (accept && accept->find("text/plain") != std::string::npos && accept->find("json") == std::string::npos) {
    return Response::Text(200, std::move(text));
  }
  return Response::Text(200, std::move(json), "application/json");
}

}  // namespace cincinnati::server
