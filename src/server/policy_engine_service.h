// PolicyEngineService: the policy engine daemon (upstream's policy-engine: routes, negotiation, parameters, chain).
//
// Its upstream is a state machine (server/upstream_state.h):
//  * in-process: a graph handed over with SetGraph() (`cincinnati serve`);
//  * a graph builder over HTTP: fetched in the background every `cache_ttl` (every
//    second until the first graph) and shared by all requests; a failed fetch keeps
//    the last good graph (before the first one, requests get the failure);
//  * another policy engine over HTTP: client queries are forwarded and their answers
//    kept in a bounded cache with stale-if-error and a fetch budget
//    (server/forwarded_answers.h). Upstream error documents are passed through.
// The kind is detected (`upstream_kind` auto, the default) or configured.
// For each shared graph, answers are precomputed per (channel, arch) and served with
// ETag/304 and gzip. When the graph has hotfix releases for the requested channel and
// the request has an `id`, the cluster directory says who owns the cluster (on a
// lookup thread when the answer is not at hand); the hotfixes it may see become the
// chain's entitlements. A failed lookup serves the general graph, counts in
// cluster_directory_failures_total and is logged at most once per
// `directory_log_interval`. The query is decoded once per request. Any exception in a
// request, a fetch or a lookup becomes a 500 failed_plugin_execution answer (or a
// failed fetch), logged once per cause; none crosses a thread.
// Routes: `{prefix}/graph`, `{prefix}/v1/graph`, `{prefix}/openapi`,
// `{prefix}/v1/openapi`, `{prefix}/v1/path` and `{prefix}/v1/explain` (insight/queries.h:
// answered with the same chain, on the graph builder's graph with its explanation keys;
// answers are never computed from, nor carry, those keys otherwise; not available while
// forwarding to another policy engine); with `web_ui`, the graph page at `/` and its data
// under `{prefix}/v1/ui/` (ui/web_page.h; SVG laid out once per view and graph, cached);
// status `/livez`, `/readyz`, `/metrics`.
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/error_document.h"
#include "core/graph.h"
#include "core/transform.h"
#include "core/update_report.h"
#include "directory/cluster_directory.h"
#include "env/clock.h"
#include "policy/channel_target.h"
#include "policy/hotfix_filter.h"
#include "reports/served_edges.h"
#include "server/forwarded_answers.h"
#include "http_server/http_types.h"
#include "http_server/metrics.h"
#include "server/http_names.h"
#include "server/signature_files.h"
#include "server/periodic_task.h"
#include "server/upstream_state.h"
#include "server/upstream_trust.h"
#include "server/view_cache.h"

namespace cincinnati::server {

class ReportIntake;
class AnswerSigner;
class GraphGeneration;

struct PolicyEngineOptions {
  std::string path_prefix;  // normalized
  bool web_ui = false;      // the graph page at / and {prefix}/v1/ui/... (ui_routes.cc)
  std::string signatures_dir;  // served on the main listener when set (signature_files.h)
  std::vector<std::string> mandatory_client_parameters;
  std::string upstream_url;  // empty: in-process upstream
  UpstreamKind upstream_kind = UpstreamKind::kAuto;
  std::chrono::milliseconds upstream_timeout{30000};
  std::chrono::milliseconds cache_ttl{60000};
  size_t max_upstream_body_bytes = 64u << 20;
  size_t fetch_threads = 4;
  size_t max_cached_queries = 4096;  // on-demand views per graph, and forwarded queries
  size_t max_cached_bytes = 256u << 20;  // forwarded answers' bodies
  std::chrono::milliseconds max_stale{std::chrono::hours(24)};  // forwarded answers kept past a failed refresh
  double max_fetches_per_second = 50;  // forwarded queries
  // The wall clock: phased rollouts, signatures' times, graph generations, report times.
  std::shared_ptr<env::Clock> clock = env::SharedRealClock();
  std::shared_ptr<directory::ClusterDirectory> directory;  // none: nobody sees hotfixes
  size_t directory_threads = 8;
  size_t max_pending_lookups = 1024;  // beyond: fail open at once
  std::chrono::milliseconds directory_log_interval{60000};
  // Update reports: agents' POST {prefix}/v1/reports, and the polls it must
  // see (report_intake.h). Null: the path is not served.
  std::shared_ptr<ReportIntake> reports;
  // Signed answers (answer_signer.h): every answer from the shared graph carries
  // Cincinnati-Signature and Cincinnati-Graph-Generation. Null: unsigned.
  std::shared_ptr<AnswerSigner> signer;
  // The upstream's signed answers are checked against these keys (upstream_trust.h);
  // nullopt: taken as they come.
  std::optional<TrustedKeys> upstream_keys;
  bool upstream_require_signature = false;
  // Routes tried before the policy engine's own (serve: the brakes' API, report_routes.h).
  std::function<std::optional<Response>(const Request&)> extra_routes;
};

using Respond = std::function<void(Response)>;

class PolicyEngineService {
 public:
  PolicyEngineService(TransformChain chain, PolicyEngineOptions options, std::string git_commit);
  ~PolicyEngineService();

  // In-process upstream: answers for this graph from now on. `generation`: the graph's
  // number from its builder (0: numbered here, graph_generation.h); `fresh_as_of`: when
  // its source last had word of it (Unix seconds; 0: now), which signatures count from.
  void SetGraph(std::shared_ptr<const Graph> graph, uint64_t generation = 0, int64_t fresh_as_of = 0);
  // HTTP upstream: starts the background refresh.
  void StartUpstream();
  void Stop();

  void HandleMain(const Request& request, Respond respond);
  Response HandleStatus(const Request& request);
  bool ready() const { return ready_.load(); }
  UpstreamState upstream_state() const { return state_.load(); }
  // Whether a report's edge is one of the graph it serves, in the report's channel and
  // for its arch (reports/served_edges.h; the report intake's step 6): OK, InvalidArgument
  // naming what is not there, or an error when there is nothing to check against (no
  // graph yet). Forwarding client queries to another policy engine, it checks the answer
  // that engine gives the report's cluster (fetched as a forwarded query, parsed once
  // per distinct answer); `done` may then be called on a fetch thread.
  void CheckReportEdge(const UpdateReport& report, std::function<void(Status)> done);
  // Sets phased_update_rollout{channel,from,to} for the edges now in a window (and the
  // signatures made, when signing).
  void UpdateRolloutMetric();
  const Registry& metrics() const { return metrics_; }
  size_t precomputed_views() const;

 private:
  struct Pool;
  // One fetch of the upstream URL, and the state transition it makes.
  void FetchShared();
  // Asks the graph builder for its records of the graph served (`graph`, the bytes of
  // upstream_body_hash_) and, when they are of exactly those bytes, makes them the graph
  // that explanations read; sets records_retry_. The graph's answers never wait on it.
  void AttachRecords(const Graph& graph);
  // The answer, or nullopt when it comes later through `respond` (from another thread).
  std::optional<Response> Route(const Request& request, const Respond& respond);
  // A graph request's poll, for the report intake once it is answered (200 or 304).
  struct Sighting {
    ReportIntake* intake;
    std::string id, version;
    void Saw(const Response& answer) const;
    Respond Wrap(Respond respond) const;  // records it when the answer goes out
  };
  std::optional<Sighting> SightingOf(const Parameters& params) const;
  std::optional<Response> ServeShared(const Request& request, const std::string& content_type, Parameters params,
                                      const Respond& respond, const Sighting* sighting = nullptr);
  void ServeForwarded(const Request& request, const std::string& content_type, const Parameters& params,
                      Respond respond);
  ForwardedAnswer FetchForwarded(const ForwardedQuery& query, bool& failed);
  int64_t Now() const;
  // Adds Cincinnati-Graph-Generation and -Fresh to an answer of `view`, and its signature
  // when signing (answer_signer.h). `per_cluster`: the answer was made for the query's
  // cluster alone (entitlements).
  void AddAnswerHeaders(Response& response, const View& view, const Parameters& params, const AnswerSource& source);
  Response Answer(const Request& request, const std::string& content_type, const Parameters& params,
                  const ClusterEntitlements& entitlements);
  // Calls `answer` with the directory's record of cluster `id`: at once when there is no
  // id or the directory answers without waiting (cache, failure, too many lookups in
  // flight), else on the lookup pool, handing the response to `respond` (nullopt then).
  using ClusterAnswer = std::function<Response(const std::optional<directory::DirectoryAnswer>&)>;
  // `sighting`: the poll to record once answered (on the lookup pool too).
  std::optional<Response> WithCluster(const Request& request, const std::optional<std::string>& id,
                                      const Respond& respond, const Sighting* sighting, ClusterAnswer answer);
  // The cluster id to look up for this request, when its answer can depend on it.
  std::optional<std::string> LookupFor(const Parameters& params, const policy::HotfixIndex* hotfixes) const;
  // Counts a directory answer (lookups, cache hits, failures, with a rate-limited log
  // line) and says whether it found the cluster.
  bool RecordLookup(const directory::DirectoryAnswer& answer);
  // Records a directory answer and returns the cluster's entitlements.
  ClusterEntitlements Entitle(const directory::DirectoryAnswer& answer, const policy::HotfixIndex& hotfixes,
                              const Parameters& params);
  // A 500 answer for an exception that escaped `what`, logged once per cause.
  Response InternalError(const Status& status);
  // {prefix}/v1/path and {prefix}/v1/explain (insight_routes.cc).
  std::optional<Response> ServeInsight(const Request& request, bool path, const Respond& respond);
  Response AnswerInsight(const Request& request, bool path, const Parameters& params,
                         const std::optional<directory::DirectoryAnswer>& cluster);
  // `/` and {prefix}/v1/ui/... (ui_routes.cc), nullopt for other paths.
  std::optional<Response> ServeUi(const Request& request);
  // The graph the views came from, with its explanation keys (SetGraph).
  std::shared_ptr<const Graph> insight_graph() const { return insight_graph_.load(); }

  TransformChain chain_;
  PolicyEngineOptions options_;
  std::optional<SignatureFiles> signatures_;
  Registry metrics_{"cincinnati_pe_"};
  Family<Counter>& incoming_requests_;
  Counter* graph_requests_ = nullptr;     // {prefix}/graph, resolved once: no lock per request
  Counter* v1_graph_requests_ = nullptr;  // {prefix}/v1/graph
  Histogram& serve_duration_;
  Family<Counter>& response_errors_;
  Counter& upstream_requests_;
  Counter& upstream_errors_;
  Counter& stale_answers_;
  Counter& throttled_fetches_;
  Family<Gauge>& upstream_state_;
  Gauge& forwarded_entries_;
  Gauge& signatures_made_;
  Gauge& signatures_withheld_;
  Gauge& generation_ahead_;
  std::unique_ptr<UpstreamTrust> upstream_trust_;  // null: the upstream's answers are taken unchecked
  Gauge& forwarded_bytes_;
  Counter& report_checks_throttled_;
  Family<Gauge>& phased_rollout_;
  Counter& directory_lookups_;
  Counter& directory_cache_hits_;
  Counter& directory_failures_;
  Family<Counter>& hotfix_views_;
  Counter& target_view_requests_;
  const policy::ChannelTarget* channel_target_ = nullptr;  // in chain_, if any
  std::string openapi_;
  std::atomic<std::shared_ptr<const policy::HotfixIndex>> hotfixes_;  // of the current graph
  std::atomic<size_t> pending_lookups_{0};
  std::atomic<int64_t> last_failure_log_ms_{INT64_MIN};
  std::atomic<uint64_t> failures_since_log_{0};

  std::atomic<UpstreamState> state_;
  std::atomic<bool> ready_{false};
  std::atomic<std::shared_ptr<ViewCache>> views_;  // the shared graph's answers; read lock-free
  // CheckReportEdge's index of the shared graph's edges, built on the first report after
  // each graph, and of the last forwarded answers it checked (by ETag).
  std::shared_ptr<const reports::ServedEdges> ServedEdgesOf(const std::shared_ptr<ViewCache>& views);
  // Whether the upstream's answer to the report's channel and arch (and its cluster's id
  // when `with_id`) has its edge; an error when it cannot be had, InvalidArgument when
  // no cluster's answer can have it.
  void CheckForwarded(const UpdateReport& report, bool with_id, std::function<void(Result<bool>)> done);
  std::shared_ptr<const reports::ServedEdges> ForwardedEdgesOf(const View& answer);
  std::mutex served_edges_mu_;
  std::weak_ptr<ViewCache> served_edges_views_;                 // under served_edges_mu_
  std::shared_ptr<const reports::ServedEdges> served_edges_;    // under served_edges_mu_
  std::vector<std::pair<std::string, std::shared_ptr<const reports::ServedEdges>>> forwarded_edges_;  // under it, newest last
  std::atomic<std::shared_ptr<const Graph>> insight_graph_;  // that graph before stripping explanation keys
  struct SvgCache;
  std::unique_ptr<SvgCache> svgs_;  // laid-out views of the current graph (ui_routes.cc)
  mutable std::mutex mu_;
  std::optional<ErrorDocument> upstream_error_;  // the last failed fetch, under mu_
  std::string last_internal_error_;              // under mu_: logged once per cause
  std::string upstream_body_hash_;               // fetch thread only
  std::unique_ptr<GraphGeneration> local_generations_;  // for graphs that come without a number
  std::atomic<int64_t> fresh_as_of_{0};          // the shared graph's source last answered (Unix seconds)
  std::atomic<int64_t> upstream_not_after_{0};   // its signature's expiry, when checked (0: none)
  // Fetch thread only: whether the builder's records (explanations of what was removed)
  // are to be asked for again while the graph stays the same (they failed to arrive, or
  // were of the builder's next graph), after how many more fetches, and what was last
  // said of them (logged once).
  bool records_retry_ = false;
  int64_t records_skip_ = 0, records_backoff_ = 0;
  std::string records_note_;

  std::stop_source shutdown_;  // requested by Stop(): fetches in flight give up
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<Pool> lookups_;  // directory lookups, when a directory is set
  std::unique_ptr<ForwardedAnswers> forwarded_;
  // A forwarding engine's answers for reports' edge checks: at most kReportCheckEntries
  // queries and kReportCheckBytes, kReportCheckFetchesPerSecond fetches a second.
  static constexpr size_t kReportCheckEntries = 256;
  static constexpr size_t kReportCheckBytes = 32u << 20;
  static constexpr double kReportCheckFetchesPerSecond = 5;
  std::unique_ptr<ForwardedAnswers> report_checks_;
  PeriodicTask fetcher_;  // last member: stopped first
};

}  // namespace cincinnati::server
