#include "server/policy_engine_service.h"

#include <malloc.h>

#include <algorithm>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/graph_check.h"
#include "core/graph_json.h"
#include "core/json_writer.h"
#include "core/metadata_keys.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "policy/phased_rollout.h"
#include "server/content_negotiation.h"
#include "http/client.h"
#include "server/query.h"
#include "server/responses.h"

namespace cincinnati::server {

struct PolicyEngineService::Pool {
  explicit Pool(size_t n) : pool(n) {}
  boost::asio::thread_pool pool;
};

// One forwarded query's cached answer, or the fetch in progress for it.
struct PolicyEngineService::QueryState {
  std::chrono::steady_clock::time_point fetched;
  std::shared_ptr<const View> view;
  std::optional<ErrorDocument> error;
  bool in_flight = false;
  std::vector<std::function<void()>> waiters;
};

namespace {

// What the upstream answered, read as a graph or as an error document.
struct Fetched {
  std::optional<Graph> graph;
  std::string body_hash;   // set when the caller passed the hash it already has
  bool unchanged = false;  // the body hashes to that: not parsed again
  std::optional<ErrorDocument> error;
  bool asks_for_parameters = false;  // a policy engine wanting the client's query
};

// With `known_body_hash`, a body identical to the last one is neither parsed nor
// checked again (a 10 MB graph takes ~120 ms to read and check).
Fetched Fetch(const std::string& url, std::chrono::milliseconds timeout, Counter& requests, Counter& errors,
              const std::string* known_body_hash = nullptr) {
  requests.Increment();
  Fetched out;
  http::Result r = http::Get(url, {.headers = {"Accept: application/json"}, .timeout = timeout});
  if (!r.error.empty()) {
    errors.Increment();
    out.error = ErrorDocument::Of("failed_upstream_fetch", r.error);
    return out;
  }
  if (r.status < 200 || r.status >= 300) {
    errors.Increment();
    auto doc = ErrorDocument::Parse(r.body);
    if (doc.ok()) {
      doc->http_status = static_cast<int>(r.status);
      out.asks_for_parameters = doc->kind == "missing_params";
      out.error = std::move(doc).value();
    } else {
      out.error = ErrorDocument::Of("failed_upstream_fetch", fmt::format("{} from {}", r.status, url));
    }
    return out;
  }
  if (known_body_hash) {
    out.body_hash = Sha256Hex(r.body);
    if (out.body_hash == *known_body_hash) {
      out.unchanged = true;
      return out;
    }
  }
  auto graph = ReadGraphJson(r.body);
  if (graph.ok()) {
    if (Status servable = CheckServable(*graph); !servable.ok()) graph = std::move(servable);
  }
  if (!graph.ok()) {
    errors.Increment();
    out.error = ErrorDocument::Of("failed_json_in", graph.status().message());
    return out;
  }
  out.graph = std::move(graph).value();
  return out;
}

}  // namespace

PolicyEngineService::PolicyEngineService(TransformChain chain, PolicyEngineOptions options, std::string git_commit)
    : chain_(std::move(chain)),
      options_(std::move(options)),
      incoming_requests_(metrics_.AddCounter("graph_incoming_requests_total", "Graph requests", {"uri_path"})),
      serve_duration_(metrics_.AddHistogram("graph_serve_duration_seconds", "Seconds spent answering a graph request",
                                            {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 5.0}).Get()),
      response_errors_(metrics_.AddCounter("graph_response_errors_total", "Error responses", {"code", "kind"})),
      upstream_requests_(metrics_.AddCounter("http_upstream_requests_total", "Upstream graph fetches").Get()),
      upstream_errors_(metrics_.AddCounter("http_upstream_errors_total", "Failed upstream graph fetches").Get()),
      phased_rollout_(metrics_.AddGauge("phased_update_rollout",
                                        "Fraction of the phased-rollout window elapsed, for edges in a window",
                                        {"channel", "from", "to"})),
      directory_lookups_(metrics_.AddCounter("cluster_directory_lookups_total",
                                             "Cluster directory lookups (cache hits included)").Get()),
      directory_cache_hits_(metrics_.AddCounter("cluster_directory_cache_hits_total",
                                                "Cluster directory lookups answered from the cache").Get()),
      directory_failures_(metrics_.AddCounter("cluster_directory_failures_total",
                                              "Failed cluster directory lookups, answered with the general graph").Get()),
      hotfix_views_(metrics_.AddCounter("hotfix_views_total", "Answers that include a hotfix", {"hotfix"})),
      target_view_requests_(metrics_.AddCounter("target_view_requests_total",
                                                "Requests answered with a channel-target view").Get()),
      pool_(std::make_unique<Pool>(std::max<size_t>(1, options_.fetch_threads))) {
  for (const auto& step : chain_) {
    if (auto* target = dynamic_cast<const policy::ChannelTarget*>(step.get())) channel_target_ = target;
  }
  if (options_.directory) lookups_ = std::make_unique<Pool>(std::max<size_t>(1, options_.directory_threads));
  metrics_.AddCounter("build_info", "Build information", {"git_commit"}).With({std::move(git_commit)}).Increment();
  graph_requests_ = &incoming_requests_.With({options_.path_prefix + "/graph"});
  v1_graph_requests_ = &incoming_requests_.With({options_.path_prefix + "/v1/graph"});
  openapi_ = OpenApiDocument();
}

PolicyEngineService::~PolicyEngineService() { Stop(); }

void PolicyEngineService::SetGraph(std::shared_ptr<const Graph> graph) {
  auto start = std::chrono::steady_clock::now();
  auto hotfixes = std::make_shared<const policy::HotfixIndex>(*graph);
  hotfixes_.store(hotfixes->empty() ? nullptr : std::move(hotfixes));
  auto views = std::make_shared<ViewCache>(chain_, std::move(graph), options_.max_cached_queries);
  size_t built = views->Precompute(PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix), std::string(kArchKey));
  spdlog::info("policy engine: {} answers precomputed in {:.1f} ms", built,
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  views_.store(std::move(views));
  {
    std::lock_guard<std::mutex> lock(mu_);
    upstream_error_.reset();
  }
  ready_ = true;
  // The previous graph's answers were just freed, from whichever threads built them;
  // hand the free pages back so a service taking a new graph every few seconds keeps
  // a flat RSS instead of growing per-thread malloc arenas.
  malloc_trim(0);
}

size_t PolicyEngineService::precomputed_views() const {
  auto views = views_.load();
  return views ? views->size() : 0;
}

void PolicyEngineService::StartUpstream() {
  if (options_.upstream_url.empty()) return;
  // Polls a graph builder every TTL, but every second until the first graph arrives
  // (a graph builder starting next to us may not have one yet). Stops once the
  // upstream turns out to be a policy engine.
  auto tick = std::min<std::chrono::milliseconds>(options_.cache_ttl, std::chrono::seconds(1));
  fetcher_.Start(tick, [this, last = std::chrono::steady_clock::time_point()]() mutable {
    auto now = std::chrono::steady_clock::now();
    if (!views_.load() || last == std::chrono::steady_clock::time_point() || now - last >= options_.cache_ttl) {
      FetchShared();
      last = now;
    }
    return !forward_queries_.load();
  });
}

void PolicyEngineService::Stop() {
  fetcher_.Stop();
  pool_->pool.join();
  if (lookups_) lookups_->pool.join();
}

bool PolicyEngineService::FetchShared() {
  Fetched f = Fetch(options_.upstream_url, options_.upstream_timeout, upstream_requests_, upstream_errors_,
                    &upstream_body_hash_);
  if (f.asks_for_parameters || (f.graph && f.graph->is_served_view())) {
    spdlog::info("policy engine: upstream {} is a policy engine; forwarding client queries", options_.upstream_url);
    forward_queries_ = true;
    ready_ = true;
    return true;
  }
  if (!f.graph && !f.unchanged) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!upstream_error_ || FailureCause(upstream_error_->value) != FailureCause(f.error->value)) {
      spdlog::error("policy engine: upstream fetch failed{}: {}", views_.load() ? " (serving the last good graph)" : "",
                    f.error->value);
    }
    upstream_error_ = f.error;
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (upstream_error_) {
      spdlog::warn("policy engine: upstream fetch succeeded again after: {}", upstream_error_->value);
      upstream_error_.reset();
    }
  }
  if (f.unchanged) return true;  // keep the precomputed answers
  upstream_body_hash_ = std::move(f.body_hash);
  SetGraph(std::make_shared<const Graph>(std::move(*f.graph)));
  return true;
}

std::optional<std::string> PolicyEngineService::LookupFor(const Parameters& params,
                                                          const policy::HotfixIndex* hotfixes) const {
  if (!options_.directory || !hotfixes) return std::nullopt;
  auto id = params.find("id");
  auto channel = params.find("channel");
  if (id == params.end() || id->second.empty() || channel == params.end()) return std::nullopt;
  for (const HotfixRule& rule : hotfixes->rules()) {
    if (rule.InChannel(channel->second)) return id->second;
  }
  return std::nullopt;  // no hotfix in this channel: the answer is everyone's
}

void PolicyEngineService::Entitle(const policy::DirectoryAnswer& answer, const policy::HotfixIndex& hotfixes,
                                  Parameters& params) {
  directory_lookups_.Increment();
  if (answer.from_cache) directory_cache_hits_.Increment();
  if (answer.kind == policy::DirectoryAnswer::Kind::kFailed) {
    directory_failures_.Increment();
    // Once per interval, with the count since the last line: a dead directory must not
    // flood the log at the request rate.
    uint64_t failures = failures_since_log_.fetch_add(1) + 1;
    int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now().time_since_epoch()).count();
    int64_t last = last_failure_log_ms_.load();
    if ((last == INT64_MIN || now - last >= options_.directory_log_interval.count()) &&
        last_failure_log_ms_.compare_exchange_strong(last, now)) {
      failures = failures_since_log_.exchange(0);
      spdlog::warn("policy engine: cluster directory ({}) lookup failed, serving the general graph ({} failure{} "
                   "since the last report): {}",
                   options_.directory->kind(), failures, failures == 1 ? "" : "s", answer.error);
    }
    return;
  }
  if (answer.kind != policy::DirectoryAnswer::Kind::kFound) return;
  std::string names = hotfixes.Entitled(answer.cluster, params["channel"]);
  if (names.empty()) return;
  for (std::string_view name : Split(names, ',')) hotfix_views_.With({std::string(name)}).Increment();
  params[std::string(kEntitledHotfixesParam)] = std::move(names);
}

Response PolicyEngineService::Answer(const Request& request, const std::string& content_type, const Parameters& params) {
  std::shared_ptr<ViewCache> views = views_.load();
  if (!views) {
    std::optional<ErrorDocument> upstream_error;
    {
      std::lock_guard<std::mutex> lock(mu_);
      upstream_error = upstream_error_;
    }
    return ErrorResponse(upstream_error.value_or(ErrorDocument::Of("failed_upstream_fetch", "no upstream graph yet")),
                         response_errors_);
  }
  auto view = views->Get(params);
  if (!view.ok()) return ErrorResponse(ErrorDocument::FromStatus(view.status()), response_errors_);
  if (channel_target_ && channel_target_->Serves(params)) target_view_requests_.Increment();
  return ViewResponse(**view, request, content_type);
}

void PolicyEngineService::ServeForwarded(const Request& request, const std::string& content_type, Respond respond) {
  auto params = ParseQuery(request.query);
  if (!params.ok()) return respond(ErrorResponse(ErrorDocument::FromStatus(params.status()), response_errors_));
  const std::string key = request.query;
  auto now = std::chrono::steady_clock::now();
  std::shared_ptr<QueryState> state;
  std::shared_ptr<const View> cached_view;
  std::optional<ErrorDocument> cached_error;
  bool fetch = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = queries_[key];
    if (!slot) slot = std::make_shared<QueryState>();
    state = slot;
    bool fresh = (state->view || state->error) && now - state->fetched < options_.cache_ttl;
    if (fresh && !state->in_flight) {
      cached_view = state->view;
      cached_error = state->error;
    }
  }
  if (cached_view) return respond(ViewResponse(*cached_view, request, content_type));
  if (cached_error) return respond(ErrorResponse(*cached_error, response_errors_));
  {
    std::lock_guard<std::mutex> lock(mu_);
    state->waiters.push_back([this, state, request, content_type, respond] {
      if (state->view) return respond(ViewResponse(*state->view, request, content_type));
      respond(ErrorResponse(*state->error, response_errors_));
    });
    if (!state->in_flight) fetch = state->in_flight = true;
    if (queries_.size() > options_.max_cached_queries) {  // forget stale answers
      for (auto it = queries_.begin(); it != queries_.end();) {
        bool stale = !it->second->in_flight && now - it->second->fetched >= options_.cache_ttl;
        it = stale ? queries_.erase(it) : std::next(it);
      }
    }
  }
  if (!fetch) return;
  std::string url = options_.upstream_url + (options_.upstream_url.find('?') == std::string::npos ? "?" : "&") + key;
  Parameters query = std::move(params).value();
  boost::asio::post(pool_->pool, [this, state, url, query] {
    Fetched f = Fetch(url, options_.upstream_timeout, upstream_requests_, upstream_errors_);
    std::shared_ptr<const View> view;
    std::optional<ErrorDocument> error = f.error;
    if (f.graph) {
      auto computed = ComputeView(chain_, *f.graph, query);
      if (computed.ok()) {
        view = std::move(computed).value();
      } else {
        error = ErrorDocument::FromStatus(computed.status());
      }
    }
    std::vector<std::function<void()>> waiters;
    {
      std::lock_guard<std::mutex> lock(mu_);
      state->view = view;
      state->error = error;
      state->fetched = std::chrono::steady_clock::now();
      state->in_flight = false;
      waiters.swap(state->waiters);
    }
    for (auto& w : waiters) w();
  });
}

void PolicyEngineService::HandleMain(const Request& request, Respond respond_raw) {
  Respond respond = [&request, respond_raw](Response r) {
    AddCorsHeaders(request, r);
    respond_raw(std::move(r));
  };
  Response preflight;
  if (HandleCors(request, preflight)) return respond_raw(std::move(preflight));
  const std::string& path = request.path;
  const std::string& prefix = options_.path_prefix;
  if (path == prefix + "/openapi" || path == prefix + "/v1/openapi") {
    return respond(Response::Text(200, openapi_, "application/json"));
  }
  if (path != prefix + "/graph" && path != prefix + "/v1/graph") return respond(Response::Empty(404));
  if (request.method != "GET" && request.method != "HEAD") return respond(Response::Empty(405));
  (path == prefix + "/graph" ? graph_requests_ : v1_graph_requests_)->Increment();
  auto content_type = NegotiateContentType(request.Header("Accept"), {std::string(kCincinnatiV1)});
  if (!content_type) return respond(ErrorResponse(ErrorDocument::Of("invalid_content_type"), response_errors_));
  if (auto missing = MissingParameters(request.query, options_.mandatory_client_parameters)) {
    return respond(ErrorResponse(*missing, response_errors_));
  }
  if (forward_queries_) {
    // The responder may run on a fetch thread after this request object is gone.
    Request copy = request;
    return ServeForwarded(copy, *content_type, [copy, respond_raw](Response r) {
      AddCorsHeaders(copy, r);
      respond_raw(std::move(r));
    });
  }
  auto start = std::chrono::steady_clock::now();
  auto params = ParseQuery(request.query);
  if (!params.ok()) return respond(ErrorResponse(ErrorDocument::FromStatus(params.status()), response_errors_));
  params->erase(std::string(kEntitledHotfixesParam));  // only the directory may set it
  std::shared_ptr<const policy::HotfixIndex> hotfixes = hotfixes_.load();
  if (auto id = LookupFor(*params, hotfixes.get())) {
    std::optional<policy::DirectoryAnswer> quick = options_.directory->Quick(*id);
    if (!quick && pending_lookups_.load() >= options_.max_pending_lookups) {
      quick = policy::DirectoryAnswer::Failed("too many cluster directory lookups in flight");
    }
    if (!quick) {
      // Waits for the directory off the I/O threads; the request object may be gone then.
      ++pending_lookups_;
      boost::asio::post(lookups_->pool, [this, copy = request, content_type = *content_type, params = std::move(*params),
                                         hotfixes, id = *id, respond_raw, start]() mutable {
        Entitle(options_.directory->Lookup(id), *hotfixes, params);
        --pending_lookups_;
        Response r = Answer(copy, content_type, params);
        serve_duration_.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        AddCorsHeaders(copy, r);
        respond_raw(std::move(r));
      });
      return;
    }
    Entitle(*quick, *hotfixes, *params);
  }
  Response r = Answer(request, *content_type, *params);
  serve_duration_.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  respond(std::move(r));
}

void PolicyEngineService::UpdateRolloutMetric() {
  auto views = views_.load();
  phased_rollout_.Clear();
  if (!views) return;
  int64_t now = options_.clock ? options_.clock()
                               : std::chrono::duration_cast<std::chrono::seconds>(
                                     std::chrono::system_clock::now().time_since_epoch()).count();
  for (const policy::RolloutWindow& w : policy::RolloutWindows(views->graph())) {
    if (now >= w.begin && now < w.begin + w.duration) phased_rollout_.With({w.channel, w.from, w.to}).Set(w.Fraction(now));
  }
}

Response PolicyEngineService::HandleStatus(const Request& request) {
  if (request.path == "/livez") return Response::Empty(200);
  if (request.path == "/readyz") return Response::Empty(ready_ ? 200 : 503);
  if (request.path == "/metrics") {
    UpdateRolloutMetric();
    return Response::Text(200, metrics_.Render(), kMetricsContentType);
  }
  return Response::Empty(404);
}

std::string PolicyEngineService::OpenApiDocument() const {
  const std::string& prefix = options_.path_prefix;
  std::string mandatory;
  for (const std::string& key : options_.mandatory_client_parameters) {
    mandatory += fmt::format(R"(,{{"in":"query","name":{},"required":true,"schema":{{"type":"string"}}}})",
                             JsonString(key));
  }
  constexpr const char* kParams =
      R"({"in":"query","name":"arch","required":false,"schema":{"type":"string","default":"amd64"},)"
      R"("description":"Architecture of the releases to return"},)"
      R"({"in":"query","name":"channel","required":false,"schema":{"type":"string"},"description":"Channel to return"},)"
      R"({"in":"query","name":"version","required":false,"schema":{"type":"string","pattern":"^[0-9]+\\.[0-9]+\\.[0-9]+$"},)"
      R"("description":"Version the client runs"},)"
      R"({"in":"query","name":"id","required":false,"schema":{"type":"string"},"description":"Cluster id"})";
  constexpr const char* kResponses =
      R"("responses":{"200":{"description":"The update graph","content":{"application/json":{"schema":)"
      R"({"$ref":"#/components/schemas/Graph"}},"application/vnd.redhat.cincinnati.v1+json":{"schema":)"
      R"({"$ref":"#/components/schemas/Graph"}}}},"400":{"description":"Missing or invalid parameters",)"
      R"("content":{"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}},)"
      R"("406":{"description":"Unacceptable Accept header","content":{"application/json":{"schema":)"
      R"({"$ref":"#/components/schemas/Error"}}}},"500":{"description":"Server error","content":)"
      R"({"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}},)"
      R"("default":{"description":"Error","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}}})";
  constexpr const char* kComponents =
      R"("components":{"schemas":{"Graph":{"type":"object","required":["version","nodes","edges","conditionalEdges"],)"
      R"("properties":{"version":{"type":"integer"},"nodes":{"type":"array","items":{"$ref":"#/components/schemas/Node"}},)"
      R"("edges":{"type":"array","items":{"type":"array","items":{"type":"integer","minimum":0},"minItems":2,"maxItems":2}},)"
      R"("conditionalEdges":{"type":"array","items":{"$ref":"#/components/schemas/ConditionalEdge"}}}},)"
      R"("Node":{"type":"object","required":["version","payload","metadata"],"properties":{"version":{"type":"string"},)"
      R"("payload":{"type":"string"},"metadata":{"type":"object","additionalProperties":{"type":"string"}}}},)"
      R"("ConditionalEdge":{"type":"object","required":["edges","risks"],"properties":{"edges":{"type":"array",)"
      R"("items":{"type":"object","required":["from","to"],"properties":{"from":{"type":"string"},"to":{"type":"string"}}}},)"
      R"("risks":{"type":"array","items":{"$ref":"#/components/schemas/Risk"}}}},)"
      R"("Risk":{"type":"object","required":["url","name","message","matchingRules"],"properties":{"url":{"type":"string"},)"
      R"("name":{"type":"string"},"message":{"type":"string"},"matchingRules":{"type":"array","items":)"
      R"({"type":"object","required":["type"],"properties":{"type":{"type":"string","enum":["Always","PromQL"]},)"
      R"("promql":{"type":"object","properties":{"promql":{"type":"string"}}}}}}}},)"
      R"("Error":{"type":"object","required":["kind","value"],"properties":{"kind":{"type":"string"},"value":{"type":"string"}}}}})";
  auto path_item = [&](const std::string& extra) {
    return fmt::format(R"({{"get":{{"summary":"Update graph for a channel and architecture","parameters":[{}{}],{}}}}})",
                       kParams, extra, kResponses);
  };
  return fmt::format(R"({{"openapi":"3.0.3","info":{{"title":"Cincinnati Policy Engine","version":"v1"}},)"
                     R"("paths":{{{}:{},{}:{}}},{}}})",
                     JsonString(prefix + "/graph"), path_item(mandatory), JsonString(prefix + "/v1/graph"),
                     path_item(""), kComponents);
}

}  // namespace cincinnati::server
