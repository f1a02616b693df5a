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
// with ETag/304 and gzip. Routes: `{prefix}/graph`, `{prefix}/v1/graph`,
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
  Response Answer(const Request& request, const std::string& content_type);
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
  std::string openapi_;

  mutable std::mutex mu_;
  std::atomic<std::shared_ptr<ViewCache>> views_;  // current upstream graph's answers; read lock-free
  std::optional<ErrorDocument> upstream_error_;  // why there is no graph yet
  std::string upstream_body_hash_;
  std::atomic<bool> forward_queries_{false};
  std::atomic<bool> ready_{false};

  std::map<std::string, std::shared_ptr<QueryState>> queries_;  // forwarded mode, under mu_
  struct Pool;
  std::unique_ptr<Pool> pool_;
  PeriodicTask fetcher_;  // last member: stopped first
};

}  // namespace cincinnati::server
