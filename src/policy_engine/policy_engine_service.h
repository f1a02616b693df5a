// PolicyEngineService: the policy engine daemon (upstream's policy-engine: routes,
// negotiation, parameters, chain), the router in front of its parts:
//  * the upstream feed (upstream_feed.h): where the graph comes from (in process, a
//    graph builder over HTTP, or another policy engine whose answers are forwarded);
//  * the answer service (answer_service.h): the shared graph's precomputed answers
//    per (channel, arch), served with ETag/304 and gzip, and their generation,
//    freshness and signature headers;
//  * the cluster lookups (cluster_lookups.h): when the graph has hotfix releases for
//    the requested channel and the request has an `id`, the cluster directory says who
//    owns the cluster (on a lookup thread when the answer is not at hand); the hotfixes
//    it may see become the chain's entitlements. A failed lookup serves the general graph;
//  * the report edge checks (report_edge_checks.h) for the report intake.
// The router decodes the query once per request, counts requests, their duration and
// error answers, and records the polls a report intake must see once answered. Any
// exception in a request, a fetch or a lookup becomes a 500 failed_plugin_execution
// answer (or a failed fetch), logged once per cause; none crosses a thread.
// Routes: `{prefix}/graph`, `{prefix}/v1/graph`, `{prefix}/openapi`,
// `{prefix}/v1/openapi`, `{prefix}/v1/path` and `{prefix}/v1/explain` (insight/queries.h:
// answered with the same chain, on the graph builder's graph with its explanation keys;
// answers are never computed from, nor carry, those keys otherwise; not available while
// forwarding to another policy engine); with `web_ui`, the graph page at `/` and its data
// under `{prefix}/v1/ui/` (ui/web_page.h; SVG laid out once per view and graph, cached;
// the adoption curves from the polls seen, adoption_history.h);
// status `/livez`, `/readyz`, `/metrics` (every part's metrics in one Registry).
// Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/error_document.h"
#include "core/graph.h"
#include "core/transform.h"
#include "core/update_report.h"
#include "http_server/http_types.h"
#include "http_server/metrics.h"
#include "policy_engine/adoption_history.h"
#include "policy_engine/answer_service.h"
#include "policy_engine/cluster_lookups.h"
#include "policy_engine/policy_engine_options.h"
#include "policy_engine/report_edge_checks.h"
#include "policy_engine/upstream_feed.h"
#include "service/http_names.h"
#include "service/signature_files.h"

namespace cincinnati::server {

class ReportIntake;

using Respond = std::function<void(Response)>;

class PolicyEngineService {
 public:
  PolicyEngineService(TransformChain chain, PolicyEngineOptions options, std::string git_commit);
  ~PolicyEngineService();

  // In-process upstream: answers for this graph from now on. `generation`: the graph's
  // number from its builder (0: numbered here, signing/graph_generation.h); `fresh_as_of`: when
  // its source last had word of it (Unix seconds; 0: now), which signatures count from.
  // `content`: what names the graph's content (its builder's document and records), when
  // known: the same content again keeps the answers and their caches, as an unchanged
  // HTTP upstream does, and only moves their freshness and number.
  void SetGraph(std::shared_ptr<const Graph> graph, uint64_t generation = 0, int64_t fresh_as_of = 0,
                std::string content = {});
  // HTTP upstream: starts the background refresh.
  void StartUpstream() { feed_.Start(); }
  void Stop();

  void HandleMain(const Request& request, Respond respond);
  Response HandleStatus(const Request& request);
  bool ready() const { return feed_.ready(); }
  UpstreamState upstream_state() const { return feed_.state(); }
  // Whether a report's edge is one of the graph it serves, in the report's channel and
  // for its arch (report_edge_checks.h): OK, InvalidArgument naming what is not there,
  // or an error when there is nothing to check against (no graph yet); `done` may be
  // called on a fetch thread.
  void CheckReportEdge(const UpdateReport& report, std::function<void(Status)> done) {
    edge_checks_.Check(report, std::move(done));
  }
  // Sets phased_update_rollout{channel,from,to} for the edges now in a window (and the
  // signatures made, when signing).
  void UpdateRolloutMetric() { answers_.UpdateMetrics(); }
  const Registry& metrics() const { return metrics_; }
  size_t precomputed_views() const { return answers_.precomputed_views(); }

 private:
  // The answer, or nullopt when it comes later through `respond` (from another thread).
  std::optional<Response> Route(const Request& request, const Respond& respond);
  // {prefix}/graph and {prefix}/v1/graph, once the path is known.
  std::optional<Response> RouteGraph(const Request& request, const Respond& respond);
  // A graph request's poll, for the report intake once it is answered (200 or 304),
  // and for the adoption curves. A request with a Cincinnati-Poll-Receipt header (our
  // agents': empty asks for a first one) gets the receipt that continues it in the
  // answer's header of that name (reports/poll_receipt.h); one without costs a header
  // lookup.
  struct Sighting {
    ReportIntake* intake;
    AdoptionHistory* adoption;
    std::string id, version;
    std::optional<std::string> receipt;  // the request's header
    void Saw(Response& answer) const;
    Respond Wrap(Respond respond) const;  // records it when the answer goes out
  };
  std::optional<Sighting> SightingOf(const Request& request, const Parameters& params);
  std::optional<Response> ServeShared(const Request& request, const std::string& content_type, Parameters params,
                                      const Respond& respond, const Sighting* sighting = nullptr);
  void ServeForwarded(const Request& request, const std::string& content_type, const Parameters& params,
                      Respond respond);
  // Calls `answer` with the directory's record of cluster `id`: at once when there is no
  // id or the directory answers without waiting (cache, failure, too many lookups in
  // flight), else on the lookup pool, handing the response to `respond` (nullopt then).
  // `sighting`: the poll to record once answered (on the lookup pool too).
  std::optional<Response> WithCluster(const Request& request, const std::optional<std::string>& id,
                                      const Respond& respond, const Sighting* sighting, ClusterLookups::ClusterAnswer answer);
  // A 500 answer for an exception that escaped `what`, logged once per cause.
  Response InternalError(const Status& status);
  // {prefix}/v1/path and {prefix}/v1/explain (insight_routes.cc).
  std::optional<Response> ServeInsight(const Request& request, bool path, const Respond& respond);
  Response AnswerInsight(const Request& request, bool path, const Parameters& params,
                         const std::optional<directory::DirectoryAnswer>& cluster);
  // `/` and {prefix}/v1/ui/... (ui_routes.cc), nullopt for other paths.
  std::optional<Response> ServeUi(const Request& request);
  std::optional<Response> ServeUiData(const std::string& what, const Parameters& params);
  Response ServeSvg(const Parameters& params, const std::shared_ptr<const Graph>& full, const ViewCache& views);
  int64_t Now() const { return answers_.Now(); }

  TransformChain chain_;
  PolicyEngineOptions options_;
  std::optional<SignatureFiles> signatures_;
  std::string openapi_;
  Registry metrics_{"cincinnati_pe_"};
  Family<Counter>& incoming_requests_;
  Counter* graph_requests_ = nullptr;     // {prefix}/graph, resolved once: no lock per request
  Counter* v1_graph_requests_ = nullptr;  // {prefix}/v1/graph
  Histogram& serve_duration_;
  Family<Counter>& response_errors_;
  std::mutex mu_;
  std::string last_internal_error_;  // under mu_: logged once per cause
  AdoptionHistory adoption_;         // the polls seen, when reports are taken
  struct SvgCache;
  std::unique_ptr<SvgCache> svgs_;  // laid-out views of the current graph (ui_routes.cc)
  AnswerService answers_;
  UpstreamFeed feed_;
  ReportEdgeChecks edge_checks_;
  ClusterLookups lookups_;
};

}  // namespace cincinnati::server
