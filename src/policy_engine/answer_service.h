// AnswerService: a policy engine's answers from the shared graph (policy_engine_service.h).
//
// Publish() takes a graph: it keeps it whole for explanations and the graph page (its
// explanation keys included), strips those keys for clients, indexes its hotfixes and
// precomputes its answers per (channel, arch) (service/view_cache.h). Answer() serves a graph
// request from those views, counting answers that include a hotfix and requests a
// channel target answered; every answer, shared or forwarded, gets its generation,
// freshness and, when signing, signature headers (signing/answer_signer.h) from AddHeaders().
// UpdateMetrics() sets, at a scrape, the signatures made and withheld, how far the
// served generation is ahead of the clock, phased_update_rollout{channel,from,to}, and
// the view cache's view_cache_bytes and view_cache_entries (its estimated cost and number
// of views kept on demand); view_cache_hits_total, view_cache_misses_total and
// view_cache_evictions_total are counted as requests come, across graphs.
// Metrics are registered in the service's one Registry.
// Thread-safe: Publish, Vouched and Drop from one thread at a time (the upstream feed),
// the rest from any.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/graph.h"
#include "core/transform.h"
#include "http_server/metrics.h"
#include "policy/channel_target.h"
#include "policy/hotfix_filter.h"
#include "service/http_names.h"
#include "service/view_cache.h"
#include "signing/answer_signer.h"

namespace cincinnati::server {

struct PolicyEngineOptions;

class AnswerService {
 public:
  // `options` and `chain` outlive it; `errors`: graph_response_errors_total, the router's.
  AnswerService(const PolicyEngineOptions& options, const TransformChain& chain, Registry& metrics,
                Family<Counter>& errors);

  // Answers for this graph from now on: numbered `generation`, its source last vouched
  // for it at `fresh_as_of` (Unix seconds; 0: now).
  void Publish(std::shared_ptr<const Graph> graph, uint64_t generation, int64_t fresh_as_of);
  // The source vouched again for the graph served (`fresh_as_of`), whose upstream
  // signature expires at `not_after` (0: none).
  void Vouched(int64_t fresh_as_of, int64_t not_after);
  void set_not_after(int64_t not_after) { not_after_ = not_after; }
  // The graph is not served any more (the upstream became a policy engine).
  void Drop() { views_.store(nullptr); }
  // Explanations read this graph from now on (the builder's records merged in).
  void set_insight_graph(std::shared_ptr<const Graph> graph) { insight_graph_.store(std::move(graph)); }

  std::shared_ptr<ViewCache> views() const { return views_.load(); }
  // The graph the views came from, with its explanation keys.
  std::shared_ptr<const Graph> insight_graph() const { return insight_graph_.load(); }
  // The hotfixes of the graph served; null when it has none.
  std::shared_ptr<const policy::HotfixIndex> hotfixes() const { return hotfixes_.load(); }
  size_t precomputed_views() const;

  // The answer to a graph request for `params` and the cluster's `entitlements`, with
  // its headers; nullopt when there is no graph yet.
  std::optional<Response> Answer(const Request& request, const std::string& content_type, const Parameters& params,
                                 const ClusterEntitlements& entitlements);
  // Adds Cincinnati-Graph-Generation and -Fresh to an answer of `view`, and its signature
  // when signing (signing/answer_signer.h); `source.per_cluster`: the answer was made for the
  // query's cluster alone (entitlements).
  void AddHeaders(Response& response, const View& view, const Parameters& params, const AnswerSource& source) const;
  void UpdateMetrics();
  int64_t Now() const;

 private:
  void AddHeaders(Response& response, const View& view, const AnswerScope& scope, const AnswerSource& source,
                  const AnswerSigner::Lookup* lookup) const;

  const PolicyEngineOptions& options_;
  const TransformChain& chain_;
  Family<Counter>& errors_;
  const policy::ChannelTarget* channel_target_ = nullptr;  // in chain_, if any
  std::atomic<std::shared_ptr<ViewCache>> views_;            // the shared graph's answers; read lock-free
  std::atomic<std::shared_ptr<const Graph>> insight_graph_;  // that graph before stripping explanation keys
  std::atomic<std::shared_ptr<const policy::HotfixIndex>> hotfixes_;  // of the current graph
  std::atomic<int64_t> fresh_as_of_{0};  // the shared graph's source last answered (Unix seconds)
  std::atomic<int64_t> not_after_{0};    // its signature's expiry, when checked (0: none)
  Gauge& signatures_made_;
  Gauge& signatures_withheld_;
  Gauge& generation_ahead_;
  Family<Gauge>& phased_rollout_;
  Family<Counter>& hotfix_views_;
  Counter& target_view_requests_;
  ViewCacheCounters view_cache_counters_;
  Gauge& view_cache_bytes_;
  Gauge& view_cache_entries_;
};

}  // namespace cincinnati::server
