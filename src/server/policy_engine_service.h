// PolicyEngineService: the policy engine daemon (spec §2.2–§2.4, §4).
//
// Its upstream is one of:
//  * in-process: a graph handed over with SetGraph() (`cincinnati serve`);
//  * a graph builder over HTTP: fetched in the background every `cache_ttl` and shared
//    by all requests; a failed fetch keeps the last good graph (before the first good
//    one, requests get failed_upstream_fetch or failed_json_in);
//  * another policy engine over HTTP: detected when the upstream answers with a
//    versioned document or asks for parameters. The client's query is then forwarded
//    and each distinct query's answer is cached for `cache_ttl`, fetched off the I/O
//    threads. Upstream error documents are passed through unchanged.
// For each upstream graph, answers are precomputed per (channel, arch) and served
// with ETag/304 and gzip. When the graph has hotfix releases for the requested
// channel and the request has an `id`, the cluster directory says who owns the
// cluster (on a lookup thread when the answer is not at hand); the hotfixes it may see
// become a request parameter of the chain. A failed lookup serves the general graph,
// counts in cluster_directory_failures_total and is logged at most once per
// `directory_log_interval`. Routes: `{prefix}/graph`, `{prefix}/v1/graph`,
// `{prefix}/openapi`, `{prefix}/v1/openapi`; status `/livez`, `/readyz`, `/metrics`.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/error_document.h"
#include "core/graph.h"
#include "core/transform.h"
#include "policy/channel_target.h"
#include "policy/cluster_directory.h"
#include "policy/hotfix_filter.h"
#include "server/http_types.h"
#include "server/metrics.h"
#include "server/periodic_task.h"
#include "server/view_cache.h"

namespace cincinnati::server {

struct PolicyEngineOptions {
  std::string path_prefix;  // normalized
  std::vector<std::string> mandatory_client_parameters;
  std::string upstream_url;  // empty: in-process upstream
  std::chrono::milliseconds upstream_timeout{30000};
  std::chrono::milliseconds cache_ttl{60000};
  size_t fetch_threads = 4;
  size_t max_cached_queries = 4096;
  std::function<int64_t()> clock;  // for phased_update_rollout; default: the system's
  std::shared_ptr<policy::ClusterDirectory> directory;  // none: nobody sees hotfixes
  size_t directory_threads = 8;
  size_t max_pending_lookups = 1024;  // beyond: fail open at once
  std::chrono::milliseconds directory_log_interval{60000};
};

using Respond = std::function<void(Response)>;

class PolicyEngineService {
 public:
  PolicyEngineService(TransformChain chain, PolicyEngineOptions options, std::string git_commit);
  ~PolicyEngineService();

  // In-process upstream: answers for this graph from now on.
  void SetGraph(std::shared_ptr<const Graph> graph);
  // HTTP upstream: starts the background refresh.
  void StartUpstream();
  void Stop();

  void HandleMain(const Request& request, Respond respond);
  Response HandleStatus(const Request& request);
  bool ready() const { return ready_.load(); }
  // Sets phased_update_rollout{channel,from,to} for the edges now in a window.
  void UpdateRolloutMetric();
  const Registry& metrics() const { return metrics_; }
  size_t precomputed_views() const;

 private:
  struct QueryState;
  bool FetchShared();
  void ServeForwarded(const Request& request, const std::string& content_type, Respond respond);
  Response Answer(const Request& request, const std::string& content_type, const Parameters& params);
  // The cluster id to look up for this request, when its answer can depend on it.
  std::optional<std::string> LookupFor(const Parameters& params, const policy::HotfixIndex* hotfixes) const;
  // Records a directory answer and sets the entitled-hotfixes parameter from it.
  void Entitle(const policy::DirectoryAnswer& answer, const policy::HotfixIndex& hotfixes, Parameters& params);
  std::string OpenApiDocument() const;

  TransformChain chain_;
  PolicyEngineOptions options_;
  Registry metrics_{"cincinnati_pe_"};
  Family<Counter>& incoming_requests_;
  Counter* graph_requests_ = nullptr;     // {prefix}/graph, resolved once: no lock per request
  Counter* v1_graph_requests_ = nullptr;  // {prefix}/v1/graph
  Histogram& serve_duration_;
  Family<Counter>& response_errors_;
  Counter& upstream_requests_;
  Counter& upstream_errors_;
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

  mutable std::mutex mu_;
  std::atomic<std::shared_ptr<ViewCache>> views_;  // current upstream graph's answers; read lock-free
  std::optional<ErrorDocument> upstream_error_;  // why there is no graph yet
  std::string upstream_body_hash_;
  std::atomic<bool> forward_queries_{false};
  std::atomic<bool> ready_{false};

  std::map<std::string, std::shared_ptr<QueryState>> queries_;  // forwarded mode, under mu_
  struct Pool;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<Pool> lookups_;  // directory lookups, when a directory is set
  PeriodicTask fetcher_;  // last member: stopped first
};

}  // namespace cincinnati::server
