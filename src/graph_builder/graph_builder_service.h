// GraphBuilderService: the graph builder daemon (the reference's cincinnati/src/bin/graph-builder).
//
// A background thread runs the transform chain from an empty graph, the first time at
// once and then `pause` after the previous run ended. A good result is serialized and
// swapped in atomically; subscribers (an in-process policy engine) are told. A failed
// run is logged with its cause, counted in graph_upstream_errors_total, and the last
// good graph stays served. Readiness turns on with the first good graph and stays on.
//
// Runs never overlap: RefreshOnce() calls are serialized. With a scrape timeout the
// chain runs on a thread of its own; past the timeout (plus the reference's 1% grace)
// its context's stop token is requested, the thread is joined, and the refresh fails
// as timed out. Steps observe the token (the registry scrape and its HTTP requests end
// within about a second); one that does not delays the end of the refresh, never
// overlaps the next. Stop() cancels a running refresh the same way. No thread the
// service starts outlives Stop().
//
// Routes: main `{prefix}/graph` and `{prefix}/v1/graph` (application/json only; empty
// 200 body before the first graph; to an Accept that names kGraphRecordsMediaType, the
// records of what was removed, core/graph_records.h, or 503 before the first graph), public `{prefix}/graph-data`, status `/liveness`,
// `/readiness`, `/metrics`. Metric names are the reference's (prefix cincinnati_gb_).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/graph_records.h"
#include "core/transform.h"
#include "env/clock.h"
#include "http_server/http_types.h"
#include "http_server/metrics.h"
#include "service/http_names.h"
#include "service/signature_files.h"
#include "service/periodic_task.h"
#include "service/view_cache.h"

namespace cincinnati::server {

class AnswerSigner;
class GraphGeneration;

struct GraphSnapshot {
  std::shared_ptr<const Graph> graph;
  std::shared_ptr<const View> json;     // the graph builder's document, as the reference's
  std::shared_ptr<const View> records;  // what the builder removed (core/graph_records.h)
  uint64_t generation = 0;
  int64_t published_at = 0;  // Unix seconds: signatures of this graph count their validity from it
  // graph-data.tar.gz as the sources left it at this refresh, read once; null if none.
  std::shared_ptr<const std::string> graph_data_tar;
};

struct GraphBuilderOptions {
  std::string path_prefix;  // normalized
  std::chrono::milliseconds pause{std::chrono::seconds(300)};
  std::optional<std::chrono::milliseconds> scrape_timeout;
  std::vector<std::string> mandatory_client_parameters;
  std::string signatures_dir;  // served on the public listener when set (service/signature_files.h)
  // Numbers the graphs it publishes (signing/graph_generation.h), sent as Cincinnati-Graph-Generation;
  // null: 1, 2, ... from each start (nothing then checks them).
  std::shared_ptr<GraphGeneration> generations;
  // Signs /graph answers (signing/answer_signer.h; channel and arch empty: the whole graph). Null: unsigned.
  std::shared_ptr<AnswerSigner> signer;
  RecordPrefixes record_prefixes = DefaultRecordPrefixes();  // the chain's key prefixes
  // Applied to every graph the chain builds before it is published, and again by
  // Republish: the automatic brakes (reports/brake.h). Returns the edges it changed.
  std::function<size_t(Graph&)> overlay;
  // The wall clock: when graphs are published (their freshness) and signed.
  env::Clock* clock = &env::RealClock();
};

class GraphBuilderService {
 public:
  GraphBuilderService(TransformChain chain, GraphBuilderOptions options, std::string git_commit);
  ~GraphBuilderService();

  void Start();
  void Stop();
  // Runs the chain once on the calling thread (tests and one-shot use).
  bool RefreshOnce();
  // Publishes the last built graph again with the overlay applied anew, without running
  // the chain (a brake decided between refreshes), on the service's own thread: returns
  // at once. A refresh under way publishes the overlay's newest state anyway.
  void RequestRepublish();
  bool RepublishOnce();  // the same, on the calling thread; false before the first graph

  std::shared_ptr<const GraphSnapshot> Latest() const;
  void Subscribe(std::function<void(std::shared_ptr<const GraphSnapshot>)> fn);
  bool ready() const { return ready_.load(); }
  bool live() const { return live_.load(); }

  Response HandleMain(const Request& request);
  Response HandlePublic(const Request& request);
  Response HandleStatus(const Request& request);
  const Registry& metrics() const { return metrics_.registry; }
  // Sets the figures read at scrape time (the generation's lead on the clock); HandleStatus
  // calls it, and so must a caller that renders metrics() itself.
  void UpdateMetrics();

 private:
  Result<Graph> RunChainWithTimeout(TransformContext& context);
  // Applies the overlay to `graph` and swaps it in as the next generation.
  std::shared_ptr<const GraphSnapshot> Publish(Graph graph, std::shared_ptr<const std::string> graph_data_tar);
  Response GraphResponse(const Request& request);
  int64_t UnixNow() const;
  Response RecordsResponse(const Request& request);

  // The metric families, registered in the order they render (prefix cincinnati_gb_).
  struct Metrics {
    Metrics(const std::string& path_prefix, std::string git_commit);
    Registry registry{"cincinnati_gb_"};
    Gauge& raw_releases;
    Gauge& final_releases;
    Gauge& rejected_releases;
    Gauge& last_refresh;
    Counter& upstream_errors;
    Counter& scrapes;
    Gauge& initial_duration;
    Histogram& scrape_duration;
    Family<Counter>& incoming_requests;
    Family<Counter>& response_errors;
    Family<Gauge>& scrape_progress;
    Gauge& generation_ahead;
    Counter& generations_given_up;
    Counter* graph_requests = nullptr;  // resolved once: no lock per request
    Counter* v1_graph_requests = nullptr;
  };
  // What runs of the chain carry from one to the next; everything but `shutdown` under `mu`.
  struct RefreshState {
    std::mutex mu;               // held for a whole refresh: one at a time
    std::stop_source shutdown;   // requested by Stop(): cancels the running refresh
    std::set<std::string> last_warnings, last_notes;  // of the previous refresh, logged
    std::string last_error;      // of the latest refresh, if it failed
    std::shared_ptr<const Graph> built;  // the chain's last good graph before the overlay, if any
  };
  // The graph served and who is told of the next one (under `mu`).
  struct Published {
    mutable std::mutex mu;
    std::shared_ptr<const GraphSnapshot> latest;
    std::vector<std::function<void(std::shared_ptr<const GraphSnapshot>)>> subscribers;
    uint64_t generation = 0;
  };

  std::shared_ptr<const TransformChain> chain_;
  GraphBuilderOptions options_;
  std::optional<SignatureFiles> signatures_;
  Metrics metrics_;
  RefreshState refresh_;
  Published published_;
  std::atomic<bool> ready_{false}, live_{false};
  std::once_flag republisher_started_;
  PeriodicTask republisher_;
  PeriodicTask refresher_;  // last member: stopped first
};

}  // namespace cincinnati::server
