#include "graph_builder/graph_builder_service.h"

#include "core/sha256.h"
#include "signing/answer_signer.h"
#include "signing/graph_generation.h"

#include <algorithm>
#include <future>
#include <iterator>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/graph_check.h"
#include "core/guard.h"
#include "core/graph_json.h"
#include "core/graph_records.h"
#include "core/metadata_keys.h"
#include "core/strings.h"
#include "env/file_system.h"
#include "http_server/content_negotiation.h"
#include "service/http_names.h"
#include "service/responses.h"

namespace cincinnati::server {
namespace {

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }


// Logs what a refresh noted that the previous one did not: a warning once while it
// persists (a new one, however similar, is logged), a note when its wording changed
// beyond numbers ("8 layers fetched" and "0 layers fetched" are one note).
void LogNew(const Diagnostics& diagnostics, std::set<std::string>& last_warnings, std::set<std::string>& last_notes) {
  std::set<std::string> warnings, notes;
  for (const Diagnostic& d : diagnostics.items()) {
    std::string line = d.location + ": " + d.message;
    if (d.severity == Diagnostic::Severity::kInfo) {
      if (!last_notes.count(FailureCause(line))) spdlog::info("graph-data: {}", line);
      notes.insert(FailureCause(line));
    } else {
      if (!last_warnings.count(line)) spdlog::warn("graph-data: {}", line);
      warnings.insert(std::move(line));
    }
  }
  last_warnings = std::move(warnings);
  last_notes = std::move(notes);
}

// The reference's negotiation takes one media type, no list: so does this.
bool NamesMediaType(const std::string* accept, std::string_view type) {
  if (accept == nullptr) return false;
  std::string_view value = TrimWhitespace(*accept);
  return value.size() == type.size() &&
         std::equal(value.begin(), value.end(), type.begin(),
                    [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

}  // namespace

GraphBuilderService::Metrics::Metrics(const std::string& path_prefix, std::string git_commit)
    : raw_releases(registry.AddGauge("graph_upstream_raw_releases", "Number of releases fetched from upstream, before graph building").Get()),
      final_releases(registry.AddGauge("graph_final_releases", "Number of nodes in the last good graph").Get()),
      rejected_releases(registry.AddGauge("graph_upstream_rejected_releases",
                                          "Releases left out of the last good graph: their own metadata is unusable")
                            .Get()),
      last_refresh(registry.AddGauge("graph_last_successful_refresh_timestamp", "Unix time of the last good refresh").Get()),
      upstream_errors(registry.AddCounter("graph_upstream_errors_total", "Failed graph refreshes").Get()),
      scrapes(registry.AddCounter("graph_upstream_scrapes_total", "Graph refreshes, good or failed").Get()),
      initial_duration(registry.AddGauge("graph_initial_upstream_scrape_duration", "Seconds of the first good refresh").Get()),
      scrape_duration(registry.AddHistogram("graph_upstream_scrapes_duration", "Seconds of later refreshes",
                                            {5, 6, 7, 8, 9, 10, 15, 20, 30}).Get()),
      incoming_requests(registry.AddCounter("graph_incoming_requests_total", "Graph requests", {"uri_path"})),
      response_errors(registry.AddCounter("graph_response_errors_total", "Error responses", {"code", "kind"})),
      scrape_progress(registry.AddGauge("graph_upstream_scrape_progress",
                                        "Progress of the current or last refresh's release scrape", {"item"})),
      generation_ahead(registry.AddGauge("graph_generation_ahead_seconds",
                                         "Seconds the graph's generation is ahead of this clock (0 when it is not)").Get()),
      generations_given_up(registry.AddCounter("graph_generations_given_up_total",
                                               "Graph generations given up because they were ahead of this clock").Get()) {
  registry.AddCounter("build_info", "Build information", {"git_commit"}).With({std::move(git_commit)}).Increment();
  graph_requests = &incoming_requests.With({path_prefix + "/graph"});
  v1_graph_requests = &incoming_requests.With({path_prefix + "/v1/graph"});
}

GraphBuilderService::GraphBuilderService(TransformChain chain, GraphBuilderOptions options, std::string git_commit)
    : chain_(std::make_shared<const TransformChain>(std::move(chain))),
      options_(std::move(options)),
      signatures_(options_.signatures_dir.empty()
                      ? std::nullopt
                      : std::make_optional<SignatureFiles>(options_.signatures_dir, options_.path_prefix)),
      metrics_(options_.path_prefix, std::move(git_commit)) {
  // Unsigned graphs carry the generation lines all the same (signing/answer_signer.h).
  if (!options_.signer) options_.signer = AnswerSigner::Unsigned();
}

GraphBuilderService::~GraphBuilderService() { Stop(); }

void GraphBuilderService::UpdateMetrics() {
  if (options_.generations) metrics_.generation_ahead.Set(options_.generations->SecondsAhead());
}

int64_t GraphBuilderService::UnixNow() const {
  return std::chrono::duration_cast<std::chrono::seconds>(options_.clock->Now().time_since_epoch()).count();
}

void GraphBuilderService::Start() {
  live_ = true;
  refresher_.Start(options_.pause, [this] {
    // Whatever a refresh throws (a subscriber, the check, the serializer) is a failed
    // refresh; the loop goes on.
    Status st = Guarded("graph refresh", [this] {
      RefreshOnce();
      return Status::OK();
    });
    if (!st.ok()) {
      metrics_.upstream_errors.Increment();
      spdlog::error("{}", st.message());
    }
    return true;
  });
}

void GraphBuilderService::Stop() {
  refresh_.shutdown.request_stop();  // first: the refresher's current run ends soon, then it is joined
  refresher_.Stop();
  republisher_.Stop();
}

void GraphBuilderService::RequestRepublish() {
  // Started on first use: a service without an overlay never needs the thread. Its first
  // run is the one asked for; after that it waits for the next Wake.
  bool started = false;
  std::call_once(republisher_started_, [this, &started] {
    started = true;
    republisher_.Start(std::chrono::hours(24), [this] {
      Status st = Guarded("graph republish", [this] {
        RepublishOnce();
        return Status::OK();
      });
      if (!st.ok()) spdlog::error("{}", st.message());
      return true;
    });
  });
  if (!started) republisher_.Wake();
}

bool GraphBuilderService::RepublishOnce() {
  std::lock_guard<std::mutex> one_at_a_time(refresh_.mu);
  auto latest = Latest();
  if (!refresh_.built || !latest) return false;
  auto start = std::chrono::steady_clock::now();
  auto snapshot = Publish(*refresh_.built, latest->graph_data_tar);
  spdlog::info("graph republished in {:.3f} s (generation {}): {} edges, {} conditional edge groups",
               Seconds(std::chrono::steady_clock::now() - start), snapshot->generation, snapshot->graph->edge_count(),
               snapshot->graph->conditional_edges().size());
  return true;
}

std::shared_ptr<const GraphSnapshot> GraphBuilderService::Publish(Graph graph, std::shared_ptr<const std::string> graph_data_tar) {
  if (options_.overlay) options_.overlay(graph);
  auto snapshot = std::make_shared<GraphSnapshot>();
  // The served document is the reference's: the records of what was removed travel
  // apart (core/graph_records.h); the in-process graph keeps them for explanations.
  GraphRecords records;
  std::string document = WriteServedGraphJson(graph, &records, options_.record_prefixes);
  uint64_t generation = 0;
  if (options_.generations) {
    const uint64_t given_up = options_.generations->given_up();
    generation = options_.generations->For(Sha256Hex(document));
    metrics_.generations_given_up.Increment(static_cast<double>(options_.generations->given_up() - given_up));
  }
  snapshot->json = std::make_shared<const View>(std::move(document));
  snapshot->records = std::make_shared<const View>(WriteGraphRecordsJson(records));
  snapshot->graph = std::make_shared<const Graph>(std::move(graph));
  snapshot->graph_data_tar = std::move(graph_data_tar);
  std::vector<std::function<void(std::shared_ptr<const GraphSnapshot>)>> subscribers;
  {
    std::lock_guard<std::mutex> lock(published_.mu);
    ++published_.generation;
    snapshot->generation = generation != 0 ? generation : published_.generation;
    snapshot->published_at = UnixNow();
    published_.latest = snapshot;
    subscribers = published_.subscribers;
  }
  for (auto& fn : subscribers) fn(snapshot);
  return snapshot;
}

Result<Graph> GraphBuilderService::RunChainWithTimeout(TransformContext& context) {
  std::stop_source run;  // requested at the deadline or by Stop()
  std::stop_callback on_shutdown(refresh_.shutdown.get_token(), [&run] { run.request_stop(); });
  if (!options_.scrape_timeout) {
    context.stop = run.get_token();
    return RunChain(*chain_, Graph(), context);
  }
  TransformContext run_context;  // the caller's stays empty should the run time out
  run_context.progress = context.progress;
  run_context.stop = run.get_token();
  std::packaged_task<Result<Graph>()> task([this, &run_context]() -> Result<Graph> {
    // No exception leaves the run's thread.
    return Guarded("refresh", [&] { return RunChain(*chain_, Graph(), run_context); });
  });
  std::future<Result<Graph>> future = task.get_future();
  std::thread worker(std::move(task));
  // The reference allows a 1% grace period.
  auto limit = *options_.scrape_timeout + *options_.scrape_timeout / 100;
  bool timed_out = future.wait_for(limit) != std::future_status::ready;
  if (timed_out) run.request_stop();
  worker.join();
  if (timed_out) return Status::Internal(fmt::format("refresh timed out after {} ms", options_.scrape_timeout->count()));
  context = std::move(run_context);
  return future.get();
}

bool GraphBuilderService::RefreshOnce() {
  std::lock_guard<std::mutex> one_at_a_time(refresh_.mu);
  auto start = std::chrono::steady_clock::now();
  metrics_.scrapes.Increment();
  TransformContext context;
  context.progress = [this](std::string_view item, double value) {
    metrics_.scrape_progress.With({std::string(item)}).Set(value);
  };
  Result<Graph> graph = RunChainWithTimeout(context);
  if (graph.ok()) {
    if (Status servable = CheckServable(*graph); !servable.ok()) graph = std::move(servable);
  }
  double seconds = Seconds(std::chrono::steady_clock::now() - start);

  LogNew(context.diagnostics, refresh_.last_warnings, refresh_.last_notes);
  if (!graph.ok()) {
    metrics_.upstream_errors.Increment();
    if (ready_) metrics_.scrape_duration.Observe(seconds);
    // The cause is logged once; while it repeats, only at debug level.
    if (FailureCause(graph.status().message()) != FailureCause(refresh_.last_error)) {
      spdlog::error("graph refresh failed, {}: {}",
                    ready_ ? "still serving the previous graph" : "no graph is served yet", graph.status().message());
      refresh_.last_error = graph.status().message();
    } else {
      spdlog::debug("graph refresh failed again: {}", refresh_.last_error);
    }
    return false;
  }
  if (!refresh_.last_error.empty()) {
    spdlog::warn("graph refresh succeeded again after: {}", refresh_.last_error);
    refresh_.last_error.clear();
  }
  std::shared_ptr<const std::string> tar;
  if (auto it = context.parameters.find(kSecondaryMetadataTarParam); it != context.parameters.end()) {
    // The tarball the builder just wrote; unreadable, it is served as absent.
    auto text = env::DefaultFileSystem().ReadFile(it->second, size_t{1} << 40);
    if (text.ok()) tar = std::make_shared<const std::string>(std::move(text).value());
  }
  // Kept for a republish only when there is an overlay to apply again (a graph's copy).
  if (options_.overlay) refresh_.built = std::make_shared<const Graph>(*graph);
  // Subscribers are told before the figures below are set and the log line is written.
  auto snapshot = Publish(std::move(graph).value(), std::move(tar));
  metrics_.raw_releases.Set(static_cast<double>(context.raw_releases));
  metrics_.rejected_releases.Set(static_cast<double>(context.rejected_releases));
  metrics_.final_releases.Set(static_cast<double>(snapshot->graph->node_count()));
  metrics_.last_refresh.Set(static_cast<double>(UnixNow()));
  if (!ready_) {
    metrics_.initial_duration.Set(seconds);
  } else {
    metrics_.scrape_duration.Observe(seconds);
  }
  spdlog::info("graph refreshed in {:.3f} s: {} nodes, {} edges, {} conditional edge groups", seconds,
               snapshot->graph->node_count(), snapshot->graph->edge_count(),
               snapshot->graph->conditional_edges().size());
  ready_ = true;
  return true;
}

std::shared_ptr<const GraphSnapshot> GraphBuilderService::Latest() const {
  std::lock_guard<std::mutex> lock(published_.mu);
  return published_.latest;
}

void GraphBuilderService::Subscribe(std::function<void(std::shared_ptr<const GraphSnapshot>)> fn) {
  std::shared_ptr<const GraphSnapshot> current;
  {
    std::lock_guard<std::mutex> lock(published_.mu);
    published_.subscribers.push_back(fn);
    current = published_.latest;
  }
  if (current) fn(current);
}

Response GraphBuilderService::HandleMain(const Request& request) {
  const std::string& path = request.path;
  if (path != options_.path_prefix + "/graph" && path != options_.path_prefix + "/v1/graph") {
    return Response::Empty(404);
  }
  // Our policy engine asks for the records by name; anyone else gets the reference's
  // negotiation (a reference graph builder answers the records' type with 406). One URL,
  // two documents: every answer varies on Accept.
  const bool records = NamesMediaType(request.Header("Accept"), kGraphRecordsMediaType);
  Response r = records ? RecordsResponse(request) : GraphResponse(request);
  r.headers["Vary"] = "Accept, Accept-Encoding";
  return r;
}

Response GraphBuilderService::GraphResponse(const Request& request) {
  if (request.method != "GET" && request.method != "HEAD") return Response::Empty(405);
  (request.path == options_.path_prefix + "/graph" ? metrics_.graph_requests : metrics_.v1_graph_requests)->Increment();
  if (!NegotiateContentType(request.Header("Accept"), {std::string(kApplicationJson)})) {
    return ErrorResponse(ErrorDocument::Of("invalid_content_type"), metrics_.response_errors);
  }
  if (auto missing = MissingParameters(request.query, options_.mandatory_client_parameters)) {
    return ErrorResponse(*missing, metrics_.response_errors);
  }
  auto snapshot = Latest();
  if (!snapshot) return Response::Text(200, "", "application/json");  // before the first graph, as upstream
  Response r = ViewResponse(*snapshot->json, request, "application/json");
  AnswerSigner::Lines lines = options_.signer->HeadLines(*snapshot->json, {}, {.generation = snapshot->generation, .fresh_as_of = snapshot->published_at}, UnixNow());
  if (!lines.error.ok()) spdlog::error("graph builder: its graph goes unsigned: {}", lines.error.message());
  r.head_lines = std::move(lines.text);
  return r;
}

// Not counted with the graph's requests and errors (the reference's metrics count what
// clients ask); before the first graph 503, so that a policy engine asks again.
Response GraphBuilderService::RecordsResponse(const Request& request) {
  if (request.method != "GET" && request.method != "HEAD") return Response::Empty(405);
  auto snapshot = Latest();
  if (!snapshot) return Response::Text(503, "no graph yet", "text/plain");
  return ViewResponse(*snapshot->records, request, std::string(kGraphRecordsMediaType));
}

Response GraphBuilderService::HandlePublic(const Request& request) {
  if (signatures_) {
    if (auto answer = signatures_->Handle(request, metrics_.response_errors)) return std::move(*answer);
  }
  if (request.path != options_.path_prefix + "/graph-data") return Response::Empty(404);
  auto snapshot = Latest();
  if (!snapshot || !snapshot->graph_data_tar) {
    return ErrorResponse(ErrorDocument::Of("file_open_err", "graph-data.tar.gz: No such file or directory"),
                         metrics_.response_errors);
  }
  Response r;
  r.headers["Content-Type"] = "application/gzip";
  r.headers["Content-Disposition"] = "attachment; filename=\"graph-data.tar.gz\"";
  r.body = snapshot->graph_data_tar;  // shared, not copied
  return r;
}

Response GraphBuilderService::HandleStatus(const Request& request) {
  if (request.path == "/liveness") return Response::Empty(live_ ? 200 : 503);
  if (request.path == "/readiness") return Response::Empty(ready_ ? 200 : 503);
  if (request.path == "/metrics") {
    UpdateMetrics();
    return Response::Text(200, metrics_.registry.Render(), kMetricsContentType);
  }
  return Response::Empty(404);
}

}  // namespace cincinnati::server
