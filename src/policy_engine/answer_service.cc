#include "policy_engine/answer_service.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "core/internal_metadata.h"
#include "core/metadata_keys.h"
#include "policy/phased_rollout.h"
#include "policy_engine/policy_engine_options.h"
#include "service/responses.h"

namespace cincinnati::server {

AnswerService::AnswerService(const PolicyEngineOptions& options, const TransformChain& chain, Registry& metrics,
                             Family<Counter>& errors)
    : options_(options),
      chain_(chain),
      errors_(errors),
      signatures_made_(metrics.AddGauge("answer_signatures_made", "Answers signed so far (each kept for the requests after)").Get()),
      signatures_withheld_(metrics.AddGauge("answer_signatures_withheld",
                                            "Answers served unsigned because their signature would have expired").Get()),
      generation_ahead_(metrics.AddGauge("graph_generation_ahead_seconds",
                                         "Seconds the served graph's generation is ahead of this clock (0 when it is not)").Get()),
      phased_rollout_(metrics.AddGauge("phased_update_rollout",
                                       "Fraction of the phased-rollout window elapsed, for edges in a window",
                                       {"channel", "from", "to"})),
      hotfix_views_(metrics.AddCounter("hotfix_views_total", "Answers that include a hotfix", {"hotfix"})),
      target_view_requests_(metrics.AddCounter("target_view_requests_total",
                                               "Requests answered with a channel-target view").Get()),
      view_cache_counters_{
          &metrics.AddCounter("view_cache_hits_total", "Graph requests answered from a kept or precomputed view").Get(),
          &metrics.AddCounter("view_cache_misses_total", "Graph requests that ran the transform chain's cached steps").Get(),
          &metrics.AddCounter("view_cache_evictions_total", "Views dropped from the cache to hold its byte budget").Get()},
      view_cache_bytes_(metrics.AddGauge("view_cache_bytes",
                                         "Estimated bytes held by views computed on demand (--views.max_cached_bytes bounds it)").Get()),
      view_cache_entries_(metrics.AddGauge("view_cache_entries", "Views computed on demand and kept").Get()) {
  for (const auto& step : chain_) {
    if (auto* target = dynamic_cast<const policy::ChannelTarget*>(step.get())) channel_target_ = target;
  }
}

int64_t AnswerService::Now() const {
  return std::chrono::duration_cast<std::chrono::seconds>(options_.clock->Now().time_since_epoch()).count();
}

void AnswerService::Publish(std::shared_ptr<const Graph> graph, uint64_t generation, int64_t fresh_as_of) {
  auto start = std::chrono::steady_clock::now();
  // Explanations read the graph builder's records; clients never get them.
  insight_graph_.store(graph);
  if (HasExplanationKeys(*graph)) graph = std::make_shared<const Graph>(StripExplanationKeys(*graph));
  auto hotfixes = std::make_shared<const policy::HotfixIndex>(*graph);
  hotfixes_.store(hotfixes->empty() ? nullptr : std::move(hotfixes));
  auto views = std::make_shared<ViewCache>(chain_, std::move(graph), options_.cache.max_view_bytes, generation,
                                           view_cache_counters_);
  size_t built = views->Precompute(PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix), std::string(kArchKey));
  spdlog::info("policy engine: {} answers precomputed in {:.1f} ms", built,
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  fresh_as_of_ = fresh_as_of != 0 ? fresh_as_of : Now();
  views_.store(std::move(views));
}

void AnswerService::Vouched(int64_t fresh_as_of, int64_t not_after) {
  fresh_as_of_ = fresh_as_of;
  not_after_ = not_after;
}

size_t AnswerService::precomputed_views() const {
  auto views = views_.load();
  return views ? views->size() : 0;
}

std::optional<Response> AnswerService::Answer(const Request& request, const std::string& content_type,
                                              const Parameters& params, const ClusterEntitlements& entitlements) {
  for (const std::string& name : entitlements.hotfixes) hotfix_views_.With({name}).Increment();
  std::shared_ptr<ViewCache> views = views_.load();
  if (!views) return std::nullopt;
  auto view = views->Get(params, entitlements);
  if (!view.ok()) return ErrorResponse(ErrorDocument::FromStatus(view.status()), errors_);
  if (channel_target_ && channel_target_->Serves(params)) target_view_requests_.Increment();
  const AnswerSource source{views->generation(), fresh_as_of_.load(), not_after_.load(), !entitlements.hotfixes.empty()};
  const AnswerScope scope = QueryScope(params);
  AnswerSigner& signer = *options_.signer;
  if (!signer.signing()) {
    Response response = ViewResponse(**view, request, content_type);
    AddHeaders(response, **view, scope, source, nullptr);
    return response;
  }
  // The kept signature of one of many per-cluster answers is cold memory: fetched in two
  // steps while the body is assembled, rather than waited on after.
  const AnswerSigner::Lookup lookup = signer.PrefetchSet(**view, scope, source);
  Response response = ViewResponse(**view, request, content_type, [&] { signer.PrefetchEntry(lookup); });
  AddHeaders(response, **view, scope, source, &lookup);
  return response;
}

void AnswerService::AddHeaders(Response& response, const View& view, const Parameters& params,
                               const AnswerSource& source) const {
  AddHeaders(response, view, QueryScope(params), source, nullptr);
}

void AnswerService::AddHeaders(Response& response, const View& view, const AnswerScope& scope, const AnswerSource& source,
                               const AnswerSigner::Lookup* lookup) const {
  // The query as the client gave it: what the client checks against. Sent signed or not:
  // a policy engine forwarding to this one passes the generation and freshness on.
  AnswerSigner::Lines lines = options_.signer->HeadLines(view, scope, source, Now(), lookup);
  if (!lines.error.ok()) spdlog::error("policy engine: an answer goes unsigned: {}", lines.error.message());
  response.head_lines = std::move(lines.text);
}

void AnswerService::UpdateMetrics() {
  if (options_.signer->signing()) {
    signatures_made_.Set(static_cast<double>(options_.signer->signed_count()));
    signatures_withheld_.Set(static_cast<double>(options_.signer->withheld_count()));
  }
  auto views = views_.load();
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(options_.clock->Now().time_since_epoch()).count();
  const int64_t ahead_ms = views ? static_cast<int64_t>(views->generation()) - now_ms : 0;
  generation_ahead_.Set(ahead_ms > 0 ? static_cast<double>(ahead_ms) / 1000 : 0);
  phased_rollout_.Clear();
  view_cache_bytes_.Set(views ? static_cast<double>(views->kept_bytes()) : 0);
  view_cache_entries_.Set(views ? static_cast<double>(views->kept_entries()) : 0);
  if (!views) return;
  const int64_t now = Now();
  auto windows = policy::RolloutWindows(views->graph());
  if (!windows.ok()) return;  // never for a served graph: CheckServable decoded its keys
  for (const policy::RolloutWindow& w : *windows) {
    if (now >= w.begin && now < w.begin + w.duration) phased_rollout_.With({w.channel, w.from, w.to}).Set(w.Fraction(now));
  }
}

}  // namespace cincinnati::server
