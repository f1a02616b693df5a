#include "server/policy_engine_service.h"

#include <malloc.h>

#include <algorithm>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/guard.h"
#include "core/internal_metadata.h"
#include "core/metadata_keys.h"
#include "core/strings.h"
#include "policy/phased_rollout.h"
#include "http_server/content_negotiation.h"
#include "server/openapi.h"
#include "server/policy_engine_pool.h"
#include "http_server/query.h"
#include "server/http_names.h"
#include "server/answer_signer.h"
#include "server/graph_generation.h"
#include "server/report_intake.h"
#include "server/responses.h"
#include "server/upstream_fetch.h"

namespace cincinnati::server {

namespace {

// Real time, for log intervals: options_.clock may stand still (--testing.now).
int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(env::RealClock().Steady().time_since_epoch()).count();
}

}  // namespace

PolicyEngineService::PolicyEngineService(TransformChain chain, PolicyEngineOptions options, std::string git_commit)
    : chain_(std::move(chain)),
      options_(std::move(options)),
      signatures_(options_.signatures_dir.empty()
                      ? std::nullopt
                      : std::make_optional<SignatureFiles>(options_.signatures_dir, options_.path_prefix)),
      incoming_requests_(metrics_.AddCounter("graph_incoming_requests_total", "Graph requests", {"uri_path"})),
      serve_duration_(metrics_.AddHistogram("graph_serve_duration_seconds", "Seconds spent answering a graph request",
                                            {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 5.0}).Get()),
      response_errors_(metrics_.AddCounter("graph_response_errors_total", "Error responses", {"code", "kind"})),
      upstream_requests_(metrics_.AddCounter("http_upstream_requests_total", "Upstream graph fetches").Get()),
      upstream_errors_(metrics_.AddCounter("http_upstream_errors_total", "Failed upstream graph fetches").Get()),
      stale_answers_(metrics_.AddCounter("http_upstream_stale_answers_total",
                                         "Forwarded answers served from the cache because their refresh failed").Get()),
      throttled_fetches_(metrics_.AddCounter("http_upstream_throttled_total",
                                             "Forwarded queries not fetched because of the fetch budget").Get()),
      upstream_state_(metrics_.AddGauge("upstream_state", "1 for the upstream's current state", {"state"})),
      forwarded_entries_(metrics_.AddGauge("forwarded_answers_cached", "Forwarded queries in the cache").Get()),
      signatures_made_(metrics_.AddGauge("answer_signatures_made", "Answers signed so far (each kept for the requests after)").Get()),
      signatures_withheld_(metrics_.AddGauge("answer_signatures_withheld",
                                             "Answers served unsigned because their signature would have expired").Get()),
      generation_ahead_(metrics_.AddGauge("graph_generation_ahead_seconds",
                                          "Seconds the served graph's generation is ahead of this clock (0 when it is not)").Get()),
      forwarded_bytes_(metrics_.AddGauge("forwarded_answers_cached_bytes", "Bytes of cached forwarded answers").Get()),
      report_checks_throttled_(metrics_.AddCounter("report_edge_checks_throttled_total",
                                                   "Reports' edge checks not fetched from the upstream policy engine: over "
                                                   "their own budget (answered 503)").Get()),
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
      state_(InitialUpstreamState(options_.upstream_url.empty(), options_.upstream_kind)),
      svgs_(std::make_unique<SvgCache>()),
      pool_(std::make_unique<Pool>(std::max<size_t>(1, options_.fetch_threads))) {
  local_generations_ = GraphGeneration::InMemory(*options_.clock);
  if (options_.upstream_keys) {
    upstream_trust_ = std::make_unique<UpstreamTrust>(
        *options_.upstream_keys, options_.upstream_require_signature,
        metrics_.AddCounter("upstream_answer_signatures_total",
                            "Upstream graphs and answers checked for their signature (upstream.cincinnati.public_keys), by result: "
                            "accepted, unsigned (taken) or the reason of the refusal",
                            {"result"}));
  }
  // Unsigned answers carry the generation lines all the same (answer_signer.h).
  if (!options_.signer) options_.signer = AnswerSigner::Unsigned();
  for (const auto& step : chain_) {
    if (auto* target = dynamic_cast<const policy::ChannelTarget*>(step.get())) channel_target_ = target;
  }
  if (options_.directory) lookups_ = std::make_unique<Pool>(std::max<size_t>(1, options_.directory_threads));
  metrics_.AddCounter("build_info", "Build information", {"git_commit"}).With({std::move(git_commit)}).Increment();
  graph_requests_ = &incoming_requests_.With({options_.path_prefix + "/graph"});
  v1_graph_requests_ = &incoming_requests_.With({options_.path_prefix + "/v1/graph"});
  openapi_ = OpenApiDocument(options_.path_prefix, options_.mandatory_client_parameters);
  ForwardedAnswersOptions forwarded{options_.cache_ttl, options_.max_stale, options_.max_cached_queries,
                                    options_.max_cached_bytes, options_.max_fetches_per_second};
  forwarded_ = std::make_unique<ForwardedAnswers>(
      forwarded, [this](const ForwardedQuery& q, bool& failed) { return FetchForwarded(q, failed); }, pool_->pool,
      stale_answers_, throttled_fetches_);
  // Reports' edge checks ask the upstream too (policy_engine_reports.cc), on a budget of
  // their own: reports naming made-up channels must never spend the clients' fetches.
  ForwardedAnswersOptions checks{options_.cache_ttl, options_.max_stale, kReportCheckEntries, kReportCheckBytes,
                                 kReportCheckFetchesPerSecond};
  checks.fallback_without_id = false;
  report_checks_ = std::make_unique<ForwardedAnswers>(
      checks, [this](const ForwardedQuery& q, bool& failed) { return FetchForwarded(q, failed); }, pool_->pool, stale_answers_,
      report_checks_throttled_);
  for (UpstreamState s : kAllUpstreamStates) {
    upstream_state_.With({std::string(UpstreamStateName(s))}).Set(s == state_.load() ? 1 : 0);
  }
  if (state_.load() == UpstreamState::kForwarding) ready_ = true;
}

PolicyEngineService::~PolicyEngineService() { Stop(); }

int64_t PolicyEngineService::Now() const {
  return std::chrono::duration_cast<std::chrono::seconds>(options_.clock->Now().time_since_epoch()).count();
}

void PolicyEngineService::SetGraph(std::shared_ptr<const Graph> graph, uint64_t generation, int64_t fresh_as_of) {
  auto start = std::chrono::steady_clock::now();
  if (generation == 0) generation = local_generations_->For(upstream_body_hash_);
  // Explanations read the graph builder's records; clients never get them.
  insight_graph_.store(graph);
  if (HasExplanationKeys(*graph)) graph = std::make_shared<const Graph>(StripExplanationKeys(*graph));
  auto hotfixes = std::make_shared<const policy::HotfixIndex>(*graph);
  hotfixes_.store(hotfixes->empty() ? nullptr : std::move(hotfixes));
  auto views = std::make_shared<ViewCache>(chain_, std::move(graph), options_.max_cached_queries, generation);
  size_t built = views->Precompute(PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix), std::string(kArchKey));
  spdlog::info("policy engine: {} answers precomputed in {:.1f} ms", built,
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  fresh_as_of_ = fresh_as_of != 0 ? fresh_as_of : Now();
  views_.store(std::move(views));
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

void PolicyEngineService::Stop() {
  shutdown_.request_stop();
  fetcher_.Stop();
  pool_->pool.join();
  if (lookups_) lookups_->pool.join();
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

ClusterEntitlements PolicyEngineService::Entitle(const directory::DirectoryAnswer& answer,
                                                 const policy::HotfixIndex& hotfixes, const Parameters& params) {
  if (!RecordLookup(answer)) return {};
  auto channel = params.find("channel");
  ClusterEntitlements entitlements;
  entitlements.hotfixes = hotfixes.Entitled(answer.cluster, channel == params.end() ? "" : channel->second);
  for (const std::string& name : entitlements.hotfixes) hotfix_views_.With({name}).Increment();
  return entitlements;
}

bool PolicyEngineService::RecordLookup(const directory::DirectoryAnswer& answer) {
  directory_lookups_.Increment();
  if (answer.from_cache) directory_cache_hits_.Increment();
  if (answer.kind == directory::DirectoryAnswer::Kind::kFailed) {
    directory_failures_.Increment();
    // Once per interval, with the count since the last line: a dead directory must not
    // flood the log at the request rate.
    uint64_t failures = failures_since_log_.fetch_add(1) + 1;
    int64_t now = NowMillis();
    int64_t last = last_failure_log_ms_.load();
    if ((last == INT64_MIN || now - last >= options_.directory_log_interval.count()) &&
        last_failure_log_ms_.compare_exchange_strong(last, now)) {
      failures = failures_since_log_.exchange(0);
      spdlog::warn("policy engine: cluster directory ({}) lookup failed, serving the general graph ({} failure{} "
                   "since the last report): {}",
                   options_.directory->kind(), failures, failures == 1 ? "" : "s", answer.error);
    }
    return false;
  }
  return answer.kind == directory::DirectoryAnswer::Kind::kFound;
}

Response PolicyEngineService::Answer(const Request& request, const std::string& content_type, const Parameters& params,
                                     const ClusterEntitlements& entitlements) {
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
  auto view = views->Get(params, entitlements);
  if (!view.ok()) return ErrorResponse(ErrorDocument::FromStatus(view.status()), response_errors_);
  if (channel_target_ && channel_target_->Serves(params)) target_view_requests_.Increment();
  Response response = ViewResponse(**view, request, content_type);
  AddAnswerHeaders(response, **view, params,
                   {views->generation(), fresh_as_of_.load(), upstream_not_after_.load(), !entitlements.hotfixes.empty()});
  return response;
}

void PolicyEngineService::AddAnswerHeaders(Response& response, const View& view, const Parameters& params, const AnswerSource& source) {
  // The query as the client gave it: what the client checks against. Sent signed or not:
  // a policy engine forwarding to this one passes the generation and freshness on.
  AnswerSigner::Lines lines = options_.signer->HeadLines(view, QueryScope(params), source, Now());
  if (!lines.error.ok()) spdlog::error("policy engine: an answer goes unsigned: {}", lines.error.message());
  response.head_lines = std::move(lines.text);
}

Response PolicyEngineService::InternalError(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (FailureCause(status.message()) != FailureCause(last_internal_error_)) {
      spdlog::error("policy engine: {}", status.message());
      last_internal_error_ = status.message();
    }
  }
  return ErrorResponse(ErrorDocument::Of("failed_plugin_execution", status.message()), response_errors_);
}

ForwardedAnswer PolicyEngineService::FetchForwarded(const ForwardedQuery& query, bool& failed) {
  auto fetched = Guarded("forwarded fetch", [&]() -> Result<ForwardedAnswer> {
    const std::string& url = options_.upstream_url;
    UpstreamAnswer answer = FetchUpstream(url + (url.find('?') == std::string::npos ? "?" : "&") + query.key,
                                          {.timeout = options_.upstream_timeout,
                                           .requests = &upstream_requests_,
                                           .errors = &upstream_errors_,
                                           .max_body_bytes = options_.max_upstream_body_bytes,
                                           .stop = shutdown_.get_token(),
                                           .trust = upstream_trust_.get(),
                                           .scope = QueryScope(query.parameters),
                                           .now = Now(),
                                           .bound_plain_generation = options_.signer->signing()});
    // An error document is never signed: with signatures checked it may not replace a
    // good answer (stale-if-error keeps that), though a query with none still gets it.
    failed = (!answer.graph && !answer.answer_error) || (answer.answer_error && upstream_trust_);
    if (answer.answer_error) return ForwardedAnswer{nullptr, answer.answer_error};
    if (failed) return ForwardedAnswer{nullptr, answer.failure};
    // A graph builder's graph may carry its explanation records: never pass them on.
    if (HasExplanationKeys(*answer.graph)) *answer.graph = StripExplanationKeys(*answer.graph);
    auto view = ComputeView(chain_, *answer.graph, query.parameters);
    if (!view.ok()) return ForwardedAnswer{nullptr, ErrorDocument::FromStatus(view.status())};
    // An upstream that sends no generation: numbered here by the answer's bytes.
    const uint64_t generation = answer.generation != 0 ? answer.generation : local_generations_->For((*view)->etag());
    const int64_t now = Now();
    return ForwardedAnswer{std::move(view).value(), std::nullopt,
                           {generation, answer.fresh != 0 ? std::min(now, answer.fresh) : now, answer.not_after, answer.per_cluster}};
  });
  if (fetched.ok()) return std::move(fetched).value();
  failed = true;
  return ForwardedAnswer{nullptr, ErrorDocument::Of("failed_upstream_fetch", fetched.status().message())};
}

void PolicyEngineService::ServeForwarded(const Request& request, const std::string& content_type,
                                         const Parameters& params, Respond respond) {
  // The answer may come on a fetch thread after this request object is gone.
  forwarded_->Get(ForwardedQueryOf(params, options_.mandatory_client_parameters),
                  [this, copy = request, content_type, params, respond = std::move(respond)](const ForwardedAnswer& a) {
                    if (a.view) {
                      Response r = ViewResponse(*a.view, copy, content_type);
                      AddAnswerHeaders(r, *a.view, params, a.source);
                      return respond(std::move(r));
                    }
                    respond(ErrorResponse(*a.error, response_errors_));
                  });
}

std::optional<Response> PolicyEngineService::WithCluster(const Request& request, const std::optional<std::string>& id,
                                                         const Respond& respond, const Sighting* sighting, ClusterAnswer answer) {
  if (!id) return answer(std::nullopt);
  std::optional<directory::DirectoryAnswer> quick = options_.directory->Quick(*id);
  if (!quick && pending_lookups_.load() >= options_.max_pending_lookups) {
    quick = directory::DirectoryAnswer::Failed("too many cluster directory lookups in flight");
  }
  if (quick) return answer(quick);
  // Waits for the directory off the I/O threads; the request object may be gone then.
  ++pending_lookups_;
  // A poll answered later is seen when it is answered (a sighting wraps only this path).
  Respond later = WithCors(request, sighting ? sighting->Wrap(respond) : respond);
  boost::asio::post(lookups_->pool, [this, id = *id, respond = std::move(later), answer = std::move(answer)] {
    auto answered = Guarded("cluster directory lookup",
                            [&]() -> Result<Response> { return answer(options_.directory->Lookup(id)); });
    --pending_lookups_;
    respond(answered.ok() ? std::move(answered).value() : InternalError(answered.status()));
  });
  return std::nullopt;
}

std::optional<Response> PolicyEngineService::ServeShared(const Request& request, const std::string& content_type,
                                                         Parameters params, const Respond& respond, const Sighting* sighting) {
  auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const policy::HotfixIndex> hotfixes = hotfixes_.load();
  std::optional<std::string> id = LookupFor(params, hotfixes.get());
  return WithCluster(request, id, respond, sighting,
                     [this, copy = request, content_type, params = std::move(params), hotfixes,
                      start](const std::optional<directory::DirectoryAnswer>& cluster) {
                       ClusterEntitlements entitlements =
                           cluster ? Entitle(*cluster, *hotfixes, params) : ClusterEntitlements{};
                       Response r = Answer(copy, content_type, params, entitlements);
                       serve_duration_.Observe(
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
                       return r;
                     });
}

std::optional<Response> PolicyEngineService::Route(const Request& request, const Respond& respond) {
  const std::string& path = request.path;
  const std::string& prefix = options_.path_prefix;
  if (signatures_) {
    if (auto answer = signatures_->Handle(request, response_errors_)) return answer;
  }
  if (path == prefix + "/openapi" || path == prefix + "/v1/openapi") {
    return Response::Text(200, openapi_, "application/json");
  }
  if (options_.extra_routes) {
    if (auto answer = options_.extra_routes(request)) return answer;
  }
  if (options_.reports && path == prefix + "/v1/reports") {
    options_.reports->Handle(request, WithCors(request, respond));
    return std::nullopt;
  }
  if (options_.web_ui) {
    if (auto answer = ServeUi(request)) return answer;
  }
  if (path == prefix + "/v1/path" || path == prefix + "/v1/explain") {
    return ServeInsight(request, path == prefix + "/v1/path", respond);
  }
  if (path != prefix + "/graph" && path != prefix + "/v1/graph") return Response::Empty(404);
  if (request.method != "GET" && request.method != "HEAD") return Response::Empty(405);
  (path == prefix + "/graph" ? graph_requests_ : v1_graph_requests_)->Increment();
  auto content_type = NegotiateContentType(request.Header("Accept"), {std::string(kCincinnatiV1)});
  if (!content_type) return ErrorResponse(ErrorDocument::Of("invalid_content_type"), response_errors_);
  // Decoded once; every later step reads these parameters.
  auto params = ParseQuery(request.query);
  if (!params.ok()) {
    // The reference reports missing parameters before anything else.
    if (auto missing = MissingParameters(request.query, options_.mandatory_client_parameters)) {
      return ErrorResponse(*missing, response_errors_);
    }
    return ErrorResponse(ErrorDocument::FromStatus(params.status()), response_errors_);
  }
  if (auto missing = MissingParameters(*params, options_.mandatory_client_parameters)) {
    return ErrorResponse(*missing, response_errors_);
  }
  // Who polls at which version (a report is accepted only from them): recorded once the
  // poll is answered, so that a failed poll is no sighting.
  std::optional<Sighting> sighting = SightingOf(*params);
  if (!ServesSharedGraph(state_.load())) {
    Respond forwarded = WithCors(request, respond);
    ServeForwarded(request, *content_type, *params, sighting ? sighting->Wrap(std::move(forwarded)) : std::move(forwarded));
    return std::nullopt;
  }
  std::optional<Response> answer = ServeShared(request, *content_type, std::move(params).value(), respond,
                                               sighting ? &*sighting : nullptr);
  if (answer && sighting) sighting->Saw(*answer);
  return answer;
}

std::optional<PolicyEngineService::Sighting> PolicyEngineService::SightingOf(const Parameters& params) const {
  if (!options_.reports) return std::nullopt;
  auto id = params.find("id"), version = params.find("version");
  if (id == params.end() || version == params.end()) return std::nullopt;
  return Sighting{options_.reports.get(), id->second, version->second};
}

void PolicyEngineService::Sighting::Saw(const Response& answer) const {
  if (answer.status == 200 || answer.status == 304) intake->SawPoll(id, version);
}

Respond PolicyEngineService::Sighting::Wrap(Respond respond) const {
  return [seen = *this, respond = std::move(respond)](Response answer) {
    seen.Saw(answer);
    respond(std::move(answer));
  };
}

void PolicyEngineService::HandleMain(const Request& request, Respond respond) {
  Response preflight;
  if (HandleCors(request, preflight)) return respond(std::move(preflight));
  // Answered here in the common case; the asynchronous paths hand `respond` on (with
  // the CORS headers to add) before anything can throw.
  std::optional<Response> answer;
  Status st = Guarded("request", [&] {
    answer = Route(request, respond);
    return Status::OK();
  });
  if (!st.ok()) answer = InternalError(st.WithContext(request.target));
  if (!answer) return;
  AddCorsHeaders(request, *answer);
  respond(std::move(*answer));
}

void PolicyEngineService::UpdateRolloutMetric() {
  if (options_.signer->signing()) {
    signatures_made_.Set(static_cast<double>(options_.signer->signed_count()));
    signatures_withheld_.Set(static_cast<double>(options_.signer->withheld_count()));
  }
  auto views = views_.load();
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(options_.clock->Now().time_since_epoch()).count();
  const int64_t ahead_ms = views ? static_cast<int64_t>(views->generation()) - now_ms : 0;
  generation_ahead_.Set(ahead_ms > 0 ? static_cast<double>(ahead_ms) / 1000 : 0);
  phased_rollout_.Clear();
  if (!views) return;
  const int64_t now = Now();
  auto windows = policy::RolloutWindows(views->graph());
  if (!windows.ok()) return;  // never for a served graph: CheckServable decoded its keys
  for (const policy::RolloutWindow& w : *windows) {
    if (now >= w.begin && now < w.begin + w.duration) phased_rollout_.With({w.channel, w.from, w.to}).Set(w.Fraction(now));
  }
}

Response PolicyEngineService::HandleStatus(const Request& request) {
  if (request.path == "/livez") return Response::Empty(200);
  if (request.path == "/readyz") return Response::Empty(ready_ ? 200 : 503);
  if (request.path == "/metrics") {
    UpdateRolloutMetric();
    forwarded_entries_.Set(static_cast<double>(forwarded_->size()));
    forwarded_bytes_.Set(static_cast<double>(forwarded_->bytes()));
    return Response::Text(200, metrics_.Render(), kMetricsContentType);
  }
  return Response::Empty(404);
}

}  // namespace cincinnati::server
