// The policy engine's upstream over HTTP (policy_engine_service.h): the background fetch
// of the graph builder's graph every cache TTL, the state machine it drives
// (upstream_state.h), and the graph builder's records for explanations.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/guard.h"
#include "core/internal_metadata.h"
#include "core/metadata_keys.h"
#include "core/strings.h"
#include "server/policy_engine_service.h"
#include "server/graph_generation.h"
#include "server/upstream_fetch.h"

namespace cincinnati::server {

void PolicyEngineService::StartUpstream() {
  // In-process graphs come from SetGraph; a configured policy-engine upstream is not
  // probed (queries are forwarded as they come).
  UpstreamState initial = state_.load();
  if (initial == UpstreamState::kInProcess || options_.upstream_kind == UpstreamKind::kPolicyEngine) return;
  // Every TTL, and every second while there is no graph yet (a graph builder starting
  // next to us may not have one).
  auto tick = std::min<std::chrono::milliseconds>(options_.cache_ttl, std::chrono::seconds(1));
  // The real clock, as the task's own period: options_.clock may stand still (--testing.now).
  fetcher_.Start(tick, [this, last = std::chrono::steady_clock::time_point()]() mutable {
    auto now = env::RealClock().Steady();
    UpstreamState state = state_.load();
    bool waiting = state == UpstreamState::kDetecting || state == UpstreamState::kWaitingForGraph;
    if (waiting || last == std::chrono::steady_clock::time_point() || now - last >= options_.cache_ttl) {
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

void PolicyEngineService::FetchShared() {
  const UpstreamState state = state_.load();
  // The hash of the graph being served; none while forwarding, so a graph builder's
  // body is always taken as news then.
  static const std::string kNoHash;
  const bool shared = state == UpstreamState::kServing || state == UpstreamState::kServingStale;
  UpstreamAnswer answer = FetchUpstream(options_.upstream_url,
                                        {.timeout = options_.upstream_timeout,
                                         .requests = &upstream_requests_,
                                         .errors = &upstream_errors_,
                                         .known_body_hash = shared ? &upstream_body_hash_ : &kNoHash,
                                         .max_body_bytes = options_.max_upstream_body_bytes,
                                         .stop = shutdown_.get_token(),
                                         .trust = upstream_trust_.get(),
                                         .now = Now(),
                                         .in_turn = true,
                                         .bound_plain_generation = options_.signer->signing()});
  FetchOutcome outcome = answer.Outcome();
  if (upstream_trust_ && answer.answer_error && shared && options_.upstream_kind != UpstreamKind::kPolicyEngine) {
    // An error document is never signed: no proof that the upstream serving a signed
    // graph became a policy engine. The graph stays served, as after any failure.
    outcome = FetchOutcome::kFailed;
    upstream_errors_.Increment();
    answer.failure = ErrorDocument::Of(
        "failed_upstream_fetch", fmt::format("{} answered {} unsigned ({}), while its graph is signed: taken for a failure",
                                             options_.upstream_url, answer.answer_error->http_status, answer.answer_error->kind));
  }
  const UpstreamState next = NextUpstreamState(state, options_.upstream_kind, outcome);
  if (outcome == FetchOutcome::kPolicyEngineAnswer && next != UpstreamState::kForwarding) {
    outcome = FetchOutcome::kFailed;
    upstream_errors_.Increment();
    answer.failure = ErrorDocument::Of(
        "failed_upstream_fetch",
        fmt::format("{} answers like a policy engine, but upstream.cincinnati.kind is graph-builder", options_.upstream_url));
  }
  if (outcome == FetchOutcome::kFailed) {
    ErrorDocument failure = answer.failure.value_or(answer.answer_error.value_or(ErrorDocument::Of("failed_upstream_fetch")));
    std::lock_guard<std::mutex> lock(mu_);
    if (!upstream_error_ || FailureCause(upstream_error_->value) != FailureCause(failure.value)) {
      spdlog::error("policy engine: upstream fetch failed{}: {}",
                    views_.load() && ServesSharedGraph(next) ? " (serving the last good graph)" : "", failure.value);
    }
    upstream_error_ = std::move(failure);
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    if (upstream_error_ && next != UpstreamState::kForwarding) {
      spdlog::warn("policy engine: upstream fetch succeeded again after: {}", upstream_error_->value);
    }
    upstream_error_.reset();
  }
  if (next == UpstreamState::kForwarding && state != UpstreamState::kForwarding) {
    spdlog::info("policy engine: upstream {} is a policy engine; forwarding client queries", options_.upstream_url);
  }
  if (outcome == FetchOutcome::kGraph && ServesSharedGraph(next)) {
    if (state == UpstreamState::kForwarding) {
      spdlog::info("policy engine: upstream {} serves a graph again; serving it", options_.upstream_url);
    }
    upstream_body_hash_ = answer.body_hash;
    auto graph = std::make_shared<const Graph>(std::move(*answer.graph));
    // Fresh as of the older of this fetch and its source's word (a chain's oldest link).
    const int64_t now = Now();
    upstream_not_after_ = answer.not_after;
    SetGraph(graph, answer.generation, answer.fresh != 0 ? std::min(now, answer.fresh) : now);  // before the state: answers are ready
    records_backoff_ = records_skip_ = 0;
    AttachRecords(*graph);
  }
  if (outcome == FetchOutcome::kUnchanged && ServesSharedGraph(next)) {  // the upstream vouched again
    const int64_t now = Now();
    fresh_as_of_ = answer.fresh != 0 ? std::min(now, answer.fresh) : now;
    upstream_not_after_ = answer.not_after;
    // The same bytes, perhaps numbered again: upstream, or here when it sends no number.
    if (auto views = views_.load()) {
      const uint64_t generation = answer.generation != 0 ? answer.generation : local_generations_->For(upstream_body_hash_);
      if (views->AdoptGeneration(generation, now * 1000)) {
        spdlog::info("policy engine: the graph served is now generation {}", generation);
      }
    }
  }
  if (outcome == FetchOutcome::kUnchanged && records_retry_ && ServesSharedGraph(next)) {
    // The records failed to arrive or were of the builder's next graph: asked again, less
    // and less often (they only change explanations, never an answer to a client).
    if (records_skip_ > 0) {
      --records_skip_;
    } else if (auto current = insight_graph_.load()) {
      AttachRecords(*current);
    }
  }
  if (next != state) {
    spdlog::debug("policy engine: upstream {} -> {}", UpstreamStateName(state), UpstreamStateName(next));
    state_ = next;
    upstream_state_.With({std::string(UpstreamStateName(state))}).Set(0);
    upstream_state_.With({std::string(UpstreamStateName(next))}).Set(1);
  }
  if (next == UpstreamState::kForwarding && views_.load()) {
    views_.store(nullptr);  // the shared graph is not served any more
    upstream_body_hash_.clear();
  }
  // Ready once queries are forwarded: after the state, or a query in between would be
  // answered from a graph this engine does not have.
  if (next == UpstreamState::kForwarding) ready_ = true;
}

void PolicyEngineService::AttachRecords(const Graph& graph) {
  records_retry_ = false;
  if (HasExplanationKeys(graph)) return;  // an older graph builder's graph carries them inline
  auto fetched = FetchGraphRecords(options_.upstream_url, graph.node_count(),
                                   {.timeout = options_.upstream_timeout,
                                    .max_body_bytes = options_.max_upstream_body_bytes,
                                    .stop = shutdown_.get_token()});
  std::string note;
  if (!fetched.ok()) {
    note = fmt::format("its records of removed edges cannot be read ({}): explanations name the step only until "
                       "they can",
                       fetched.status().message());
    records_retry_ = true;
  } else if (!*fetched) {
    note = "it keeps no records of removed edges (a reference graph builder): explanations name the step only";
  } else if ((*fetched)->graph_sha256 != upstream_body_hash_) {
    note = "its records of removed edges are of another graph (it refreshed meanwhile): asked again";
    records_retry_ = true;
  } else {
    Graph merged = graph;
    if (size_t skipped = MergeGraphRecords(merged, **fetched)) {
      spdlog::warn("policy engine: {} records of the graph builder name releases its graph does not have", skipped);
    }
    insight_graph_.store(std::make_shared<const Graph>(std::move(merged)));  // explanations only
  }
  if (records_retry_) {
    // Skip 0, 1, 2, 4, ... fetches before the next try, up to about five minutes of them.
    const int64_t ttl = std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(options_.cache_ttl).count());
    records_skip_ = records_backoff_;
    records_backoff_ = std::min<int64_t>(std::max<int64_t>(1, 300 / ttl), std::max<int64_t>(1, records_backoff_ * 2));
  }
  if (note != records_note_) {
    if (!note.empty()) spdlog::info("policy engine: upstream {}: {}", options_.upstream_url, note);
    records_note_ = note;
  }
}

}  // namespace cincinnati::server
