// UpstreamFeed: where a policy engine's graph comes from (policy_engine_service.h).
//
// Its upstream is a state machine (upstream_state.h):
//  * in-process: a graph handed over with SetGraph();
//  * a graph builder over HTTP: fetched every `cache.ttl` (every second until the first
//    graph) on a thread of its own; a failed fetch keeps the last good graph (before the
//    first one, NoGraphError() says why) and is logged once per cause. The builder's
//    records of removed edges are asked for with each new graph, for explanations only,
//    and again, less and less often, while they fail to arrive;
//  * another policy engine over HTTP: client queries are forwarded (Forward) and their
//    answers kept in a bounded cache with stale-if-error and a fetch budget
//    (forwarded_answers.h), fetched on the feed's pool.
// The kind is detected (`upstream.kind` auto, the default) or configured. With trusted
// keys every graph and forwarded answer is checked (signing/upstream_trust.h). Graphs that come
// without a generation are numbered here (signing/graph_generation.h); a graph whose
// generation is older than the one served is not taken (graph-builder replicas behind one
// address that have not all caught up must not make answers go back); each is handed to the
// answer service with its freshness. Counts fetches, failures, stale and throttled
// answers, the state and the forwarded cache's size in the service's one Registry.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "core/error_document.h"
#include "core/graph.h"
#include "core/transform.h"
#include "http_server/metrics.h"
#include "policy_engine/forwarded_answers.h"
#include "policy_engine/upstream_fetch.h"
#include "policy_engine/upstream_state.h"
#include "service/http_names.h"
#include "service/periodic_task.h"
#include "signing/upstream_trust.h"

namespace boost::asio {
class thread_pool;
}

namespace cincinnati::server {

struct PolicyEngineOptions;
class AnswerService;
class GraphGeneration;

class UpstreamFeed {
 public:
  // `options`, `chain` and `answers` outlive it.
  UpstreamFeed(const PolicyEngineOptions& options, const TransformChain& chain, AnswerService& answers, Registry& metrics);
  ~UpstreamFeed();

  // Answers for this graph from now on (`generation` 0: numbered here; `fresh_as_of` 0: now).
  // A non-empty `content` equal to the last one's: the same graph again (an in-process
  // builder's refresh that changed nothing): the answers and their view cache stay.
  void SetGraph(std::shared_ptr<const Graph> graph, uint64_t generation, int64_t fresh_as_of, std::string content = {});
  // HTTP upstream: starts the background refresh.
  void Start();
  // Fetches in flight give up; the refresh stops; the pool's work ends.
  void Stop();

  UpstreamState state() const { return state_.load(); }
  bool ready() const { return ready_.load(); }
  // Why there is no graph to answer from: the last failed fetch, if any.
  ErrorDocument NoGraphError() const;
  // A client's query, answered by the upstream policy engine (from the cache when it can).
  void Forward(const ForwardedQuery& query, ForwardedAnswers::Done done);
  // Another cache of the upstream's answers on the feed's pool and fetch, with options
  // and a fetch budget of its own (reports' edge checks); stale answers count with the
  // clients'.
  std::unique_ptr<ForwardedAnswers> NewForwardedCache(ForwardedAnswersOptions options, Counter& throttled);
  // Sets the forwarded cache's gauges (at a scrape).
  void UpdateMetrics();

 private:
  // One fetch of the upstream URL, and the state transition it makes.
  void FetchShared();
  // A fetch's outcome; an unsigned error document from an upstream whose graph is
  // signed is a failure (counted, with the reason in answer.failure).
  FetchOutcome Judge(bool shared, UpstreamAnswer& answer);
  // Whether a fetched graph's generation is older than the one served (and that one is
  // not too far ahead of the clock to keep).
  bool OlderThanServed(uint64_t generation);
  // Keeps the last failure (logged once per cause) or forgets it.
  void NoteOutcome(FetchOutcome outcome, UpstreamState next, const UpstreamAnswer& answer);
  // The upstream vouched again for the bytes served: its freshness, perhaps a new number.
  void Vouched(const UpstreamAnswer& answer);
  void EnterState(UpstreamState state, UpstreamState next);
  // Asks the graph builder for its records of the graph served (`graph`, the bytes of
  // upstream_body_hash_) and, when they are of exactly those bytes, makes them the graph
  // that explanations read. The graph's answers never wait on it.
  void AttachRecords(const Graph& graph);
  ForwardedAnswer FetchForwarded(const ForwardedQuery& query, bool& failed);
  int64_t Now() const;

  // Fetch thread only: whether the builder's records (explanations of what was removed)
  // are to be asked for again while the graph stays the same (they failed to arrive, or
  // were of the builder's next graph), after how many more fetches, and what was last
  // said of them (logged once).
  struct RecordsRetry {
    bool pending = false;
    int64_t skip = 0, backoff = 0;
    std::string note;
  };
  struct Metrics {
    Counter& requests;
    Counter& errors;
    Counter& stale;
    Counter& throttled;
    Family<Gauge>& state;
    Gauge& forwarded_entries;
    Gauge& forwarded_bytes;
    Counter& older_generations;
  };

  const PolicyEngineOptions& options_;
  const TransformChain& chain_;
  AnswerService& answers_;
  Metrics metrics_;
  std::unique_ptr<UpstreamTrust> trust_;  // null: the upstream's answers are taken unchecked
  std::atomic<UpstreamState> state_;
  std::atomic<bool> ready_{false};
  mutable std::mutex mu_;
  std::optional<ErrorDocument> upstream_error_;  // the last failed fetch, under mu_
  std::string upstream_body_hash_;               // fetch thread only
  std::string in_process_content_;               // SetGraph's caller only: the content served
  std::unique_ptr<GraphGeneration> local_generations_;  // for graphs that come without a number
  RecordsRetry records_;
  std::stop_source shutdown_;  // requested by Stop(): fetches in flight give up
  std::unique_ptr<boost::asio::thread_pool> pool_;  // forwarded fetches
  std::unique_ptr<ForwardedAnswers> forwarded_;
  PeriodicTask fetcher_;  // last member: stopped first
};

}  // namespace cincinnati::server
