#include "policy_engine/upstream_feed.h"

#include <malloc.h>

#include <algorithm>

#include <boost/asio/thread_pool.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/answer_signature.h"
#include "core/guard.h"
#include "core/internal_metadata.h"
#include "core/strings.h"
#include "env/clock.h"
#include "policy_engine/answer_service.h"
#include "policy_engine/policy_engine_options.h"
#include "policy_engine/upstream_fetch.h"
#include "signing/answer_signer.h"
#include "signing/graph_generation.h"

namespace cincinnati::server {

UpstreamFeed::UpstreamFeed(const PolicyEngineOptions& options, const TransformChain& chain, AnswerService& answers,
                           Registry& metrics)
    : options_(options),
      chain_(chain),
      answers_(answers),
      metrics_{
          metrics.AddCounter("http_upstream_requests_total", "Upstream graph fetches").Get(),
          metrics.AddCounter("http_upstream_errors_total", "Failed upstream graph fetches").Get(),
          metrics.AddCounter("http_upstream_stale_answers_total",
                             "Forwarded answers served from the cache because their refresh failed").Get(),
          metrics.AddCounter("http_upstream_throttled_total", "Forwarded queries not fetched because of the fetch budget").Get(),
          metrics.AddGauge("upstream_state", "1 for the upstream's current state", {"state"}),
          metrics.AddGauge("forwarded_answers_cached", "Forwarded queries in the cache").Get(),
          metrics.AddGauge("forwarded_answers_cached_bytes", "Bytes of cached forwarded answers").Get(),
          metrics.AddCounter("http_upstream_older_generations_total",
                             "Upstream graphs not taken: older than the one served (a replica behind the others)").Get(),
      },
      state_(InitialUpstreamState(options_.upstream.url.empty(), options_.upstream.kind)),
      local_generations_(GraphGeneration::InMemory(*options_.clock)),
      pool_(std::make_unique<boost::asio::thread_pool>(std::max<size_t>(1, options_.upstream.fetch_threads))) {
  if (options_.upstream.keys) {
    trust_ = std::make_unique<UpstreamTrust>(
        *options_.upstream.keys, options_.upstream.require_signature,
        metrics.AddCounter("upstream_answer_signatures_total",
                           "Upstream graphs and answers checked for their signature (upstream.cincinnati.public_keys), by result: "
                           "accepted, unsigned (taken) or the reason of the refusal",
                           {"result"}));
  }
  ForwardedAnswersOptions forwarded{options_.cache.ttl, options_.cache.max_stale, options_.cache.max_queries,
                                    options_.cache.max_bytes, options_.cache.max_fetches_per_second};
  forwarded_ = NewForwardedCache(forwarded, metrics_.throttled);
  for (UpstreamState s : kAllUpstreamStates) {
    metrics_.state.With({std::string(UpstreamStateName(s))}).Set(s == state_.load() ? 1 : 0);
  }
  if (state_.load() == UpstreamState::kForwarding) ready_ = true;
}

UpstreamFeed::~UpstreamFeed() { Stop(); }

int64_t UpstreamFeed::Now() const {
  return std::chrono::duration_cast<std::chrono::seconds>(options_.clock->Now().time_since_epoch()).count();
}

void UpstreamFeed::SetGraph(std::shared_ptr<const Graph> graph, uint64_t generation, int64_t fresh_as_of,
                            std::string content) {
  if (generation == 0) generation = local_generations_->For(upstream_body_hash_);
  // The same content again: a new view cache would run the chain again for every view
  // (every channel-target and per-cluster view, at every refresh of the builder).
  if (!content.empty() && content == in_process_content_) {
    if (auto views = answers_.views()) {
      const int64_t now = Now();
      answers_.Vouched(fresh_as_of != 0 ? fresh_as_of : now, 0);
      if (views->AdoptGeneration(generation, now * 1000)) {
        spdlog::info("policy engine: the graph served is now generation {}", generation);
      }
      return;
    }
  }
  in_process_content_ = std::move(content);
  answers_.Publish(std::move(graph), generation, fresh_as_of);
  ready_ = true;
  // The previous graph's answers were just freed, from whichever threads built them;
  // hand the free pages back so a service taking a new graph every few seconds keeps
  // a flat RSS instead of growing per-thread malloc arenas.
  malloc_trim(0);
}

void UpstreamFeed::Stop() {
  shutdown_.request_stop();
  fetcher_.Stop();
  pool_->join();
}

ErrorDocument UpstreamFeed::NoGraphError() const {
  std::lock_guard<std::mutex> lock(mu_);
  return upstream_error_.value_or(ErrorDocument::Of("failed_upstream_fetch", "no upstream graph yet"));
}

std::unique_ptr<ForwardedAnswers> UpstreamFeed::NewForwardedCache(ForwardedAnswersOptions options, Counter& throttled) {
  return std::make_unique<ForwardedAnswers>(
      options, [this](const ForwardedQuery& q, bool& failed) { return FetchForwarded(q, failed); }, *pool_, metrics_.stale,
      throttled);
}

void UpstreamFeed::Forward(const ForwardedQuery& query, ForwardedAnswers::Done done) { forwarded_->Get(query, std::move(done)); }

void UpstreamFeed::UpdateMetrics() {
  metrics_.forwarded_entries.Set(static_cast<double>(forwarded_->size()));
  metrics_.forwarded_bytes.Set(static_cast<double>(forwarded_->bytes()));
}

ForwardedAnswer UpstreamFeed::FetchForwarded(const ForwardedQuery& query, bool& failed) {
  auto fetched = Guarded("forwarded fetch", [&]() -> Result<ForwardedAnswer> {
    const std::string& url = options_.upstream.url;
    UpstreamAnswer answer = FetchUpstream(url + (url.find('?') == std::string::npos ? "?" : "&") + query.key,
                                          {.timeout = options_.upstream.timeout,
                                           .requests = &metrics_.requests,
                                           .errors = &metrics_.errors,
                                           .max_body_bytes = options_.upstream.max_body_bytes,
                                           .stop = shutdown_.get_token(),
                                           .trust = trust_.get(),
                                           .scope = QueryScope(query.parameters),
                                           .now = Now(),
                                           .bound_plain_generation = options_.signer->signing()});
    // An error document is never signed: with signatures checked it may not replace a
    // good answer (stale-if-error keeps that), though a query with none still gets it.
    failed = (!answer.graph && !answer.answer_error) || (answer.answer_error && trust_);
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

void UpstreamFeed::Start() {
  // In-process graphs come from SetGraph; a configured policy-engine upstream is not
  // probed (queries are forwarded as they come).
  UpstreamState initial = state_.load();
  if (initial == UpstreamState::kInProcess || options_.upstream.kind == UpstreamKind::kPolicyEngine) return;
  // Every TTL, and every second while there is no graph yet (a graph builder starting
  // next to us may not have one).
  auto tick = std::min<std::chrono::milliseconds>(options_.cache.ttl, std::chrono::seconds(1));
  // The real clock, as the task's own period: options_.clock may stand still (--testing.now).
  fetcher_.Start(tick, [this, last = std::chrono::steady_clock::time_point()]() mutable {
    auto now = env::RealClock().Steady();
    UpstreamState state = state_.load();
    bool waiting = state == UpstreamState::kDetecting || state == UpstreamState::kWaitingForGraph;
    if (waiting || last == std::chrono::steady_clock::time_point() || now - last >= options_.cache.ttl) {
      Status st = Guarded("upstream fetch", [this] {
        FetchShared();
        return Status::OK();
      });
      if (!st.ok()) spdlog::error("policy engine: {}", st.message());
      last = now;
    }
    return true;
  });
}

void UpstreamFeed::FetchShared() {
  const UpstreamState state = state_.load();
  // The hash of the graph being served; none while forwarding, so a graph builder's
  // body is always taken as news then.
  static const std::string kNoHash;
  const bool shared = state == UpstreamState::kServing || state == UpstreamState::kServingStale;
  UpstreamAnswer answer = FetchUpstream(options_.upstream.url,
                                        {.timeout = options_.upstream.timeout,
                                         .requests = &metrics_.requests,
                                         .errors = &metrics_.errors,
                                         .known_body_hash = shared ? &upstream_body_hash_ : &kNoHash,
                                         .max_body_bytes = options_.upstream.max_body_bytes,
                                         .stop = shutdown_.get_token(),
                                         .trust = trust_.get(),
                                         .now = Now(),
                                         .in_turn = true,
                                         .bound_plain_generation = options_.signer->signing()});
  FetchOutcome outcome = Judge(shared, answer);
  const UpstreamState next = NextUpstreamState(state, options_.upstream.kind, outcome);
  if (outcome == FetchOutcome::kPolicyEngineAnswer && next != UpstreamState::kForwarding) {
    outcome = FetchOutcome::kFailed;
    metrics_.errors.Increment();
    answer.failure = ErrorDocument::Of(
        "failed_upstream_fetch",
        fmt::format("{} answers like a policy engine, but upstream.cincinnati.kind is graph-builder", options_.upstream.url));
  }
  NoteOutcome(outcome, next, answer);
  if (next == UpstreamState::kForwarding && state != UpstreamState::kForwarding) {
    spdlog::info("policy engine: upstream {} is a policy engine; forwarding client queries", options_.upstream.url);
  }
  if (outcome == FetchOutcome::kGraph && ServesSharedGraph(next) && OlderThanServed(answer.generation)) {
    // Replicas behind one address: one that has not caught up yet (a brake another
    // decided a second ago, a refresh still to come) serves an older graph. Taking it
    // would show clients the graph going back; the newer one stays served.
    outcome = FetchOutcome::kUnchanged;
  } else if (outcome == FetchOutcome::kGraph && ServesSharedGraph(next)) {
    if (state == UpstreamState::kForwarding) {
      spdlog::info("policy engine: upstream {} serves a graph again; serving it", options_.upstream.url);
    }
    upstream_body_hash_ = answer.body_hash;
    auto graph = std::make_shared<const Graph>(std::move(*answer.graph));
    // Fresh as of the older of this fetch and its source's word (a chain's oldest link).
    const int64_t now = Now();
    answers_.set_not_after(answer.not_after);
    SetGraph(graph, answer.generation, answer.fresh != 0 ? std::min(now, answer.fresh) : now);  // before the state: answers are ready
    records_.backoff = records_.skip = 0;
    AttachRecords(*graph);
  }
  if (outcome == FetchOutcome::kUnchanged && ServesSharedGraph(next)) Vouched(answer);
  if (outcome == FetchOutcome::kUnchanged && records_.pending && ServesSharedGraph(next)) {
    // The records failed to arrive or were of the builder's next graph: asked again, less
    // and less often (they only change explanations, never an answer to a client).
    if (records_.skip > 0) {
      --records_.skip;
    } else if (auto current = answers_.insight_graph()) {
      AttachRecords(*current);
    }
  }
  EnterState(state, next);
}

bool UpstreamFeed::OlderThanServed(uint64_t generation) {
  auto views = answers_.views();
  if (generation == 0 || !views || generation >= views->generation()) return false;
  // A served number far ahead of this clock was numbered by a clock that was ahead: its
  // upstream gave it up (signing/graph_generation.h), and so does this engine.
  const uint64_t lead_ms = kMaxGenerationLead * 1000;
  if (views->generation() > static_cast<uint64_t>(std::max<int64_t>(0, Now())) * 1000 + lead_ms) return false;
  metrics_.older_generations.Increment();
  spdlog::debug("policy engine: the upstream answered generation {}, older than the {} served; kept", generation, views->generation());
  return true;
}

FetchOutcome UpstreamFeed::Judge(bool shared, UpstreamAnswer& answer) {
  FetchOutcome outcome = answer.Outcome();
  if (trust_ && answer.answer_error && shared && options_.upstream.kind != UpstreamKind::kPolicyEngine) {
    // An error document is never signed: no proof that the upstream serving a signed
    // graph became a policy engine. The graph stays served, as after any failure.
    outcome = FetchOutcome::kFailed;
    metrics_.errors.Increment();
    answer.failure = ErrorDocument::Of(
        "failed_upstream_fetch", fmt::format("{} answered {} unsigned ({}), while its graph is signed: taken for a failure",
                                             options_.upstream.url, answer.answer_error->http_status, answer.answer_error->kind));
  }
  return outcome;
}

void UpstreamFeed::NoteOutcome(FetchOutcome outcome, UpstreamState next, const UpstreamAnswer& answer) {
  if (outcome == FetchOutcome::kFailed) {
    ErrorDocument failure = answer.failure.value_or(answer.answer_error.value_or(ErrorDocument::Of("failed_upstream_fetch")));
    std::lock_guard<std::mutex> lock(mu_);
    if (!upstream_error_ || FailureCause(upstream_error_->value) != FailureCause(failure.value)) {
      spdlog::error("policy engine: upstream fetch failed{}: {}",
                    answers_.views() && ServesSharedGraph(next) ? " (serving the last good graph)" : "", failure.value);
    }
    upstream_error_ = std::move(failure);
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    if (upstream_error_ && next != UpstreamState::kForwarding) {
      spdlog::warn("policy engine: upstream fetch succeeded again after: {}", upstream_error_->value);
    }
    upstream_error_.reset();
  }
}

void UpstreamFeed::Vouched(const UpstreamAnswer& answer) {
  const int64_t now = Now();
  answers_.Vouched(answer.fresh != 0 ? std::min(now, answer.fresh) : now, answer.not_after);
  // The same bytes, perhaps numbered again: upstream, or here when it sends no number.
  if (auto views = answers_.views()) {
    const uint64_t generation = answer.generation != 0 ? answer.generation : local_generations_->For(upstream_body_hash_);
    if (views->AdoptGeneration(generation, now * 1000)) {
      spdlog::info("policy engine: the graph served is now generation {}", generation);
    }
  }
}

void UpstreamFeed::EnterState(UpstreamState state, UpstreamState next) {
  if (next != state) {
    spdlog::debug("policy engine: upstream {} -> {}", UpstreamStateName(state), UpstreamStateName(next));
    state_ = next;
    metrics_.state.With({std::string(UpstreamStateName(state))}).Set(0);
    metrics_.state.With({std::string(UpstreamStateName(next))}).Set(1);
  }
  if (next == UpstreamState::kForwarding && answers_.views()) {
    answers_.Drop();  // the shared graph is not served any more
    upstream_body_hash_.clear();
  }
  // Ready once queries are forwarded: after the state, or a query in between would be
  // answered from a graph this engine does not have.
  if (next == UpstreamState::kForwarding) ready_ = true;
}

void UpstreamFeed::AttachRecords(const Graph& graph) {
  records_.pending = false;
  if (HasExplanationKeys(graph)) return;  // an older graph builder's graph carries them inline
  auto fetched = FetchGraphRecords(options_.upstream.url, graph.node_count(),
                                   {.timeout = options_.upstream.timeout,
                                    .max_body_bytes = options_.upstream.max_body_bytes,
                                    .stop = shutdown_.get_token()});
  std::string note;
  if (!fetched.ok()) {
    note = fmt::format("its records of removed edges cannot be read ({}): explanations name the step only until "
                       "they can",
                       fetched.status().message());
    records_.pending = true;
  } else if (!*fetched) {
    note = "it keeps no records of removed edges (a reference graph builder): explanations name the step only";
  } else if ((*fetched)->graph_sha256 != upstream_body_hash_) {
    note = "its records of removed edges are of another graph (it refreshed meanwhile): asked again";
    records_.pending = true;
  } else {
    Graph merged = graph;
    if (size_t skipped = MergeGraphRecords(merged, **fetched)) {
      spdlog::warn("policy engine: {} records of the graph builder name releases its graph does not have", skipped);
    }
    answers_.set_insight_graph(std::make_shared<const Graph>(std::move(merged)));  // explanations only
  }
  if (records_.pending) {
    // Skip 0, 1, 2, 4, ... fetches before the next try, up to about five minutes of them.
    const int64_t ttl = std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(options_.cache.ttl).count());
    records_.skip = records_.backoff;
    records_.backoff = std::min<int64_t>(std::max<int64_t>(1, 300 / ttl), std::max<int64_t>(1, records_.backoff * 2));
  }
  if (note != records_.note) {
    if (!note.empty()) spdlog::info("policy engine: upstream {}: {}", options_.upstream.url, note);
    records_.note = note;
  }
}

}  // namespace cincinnati::server
