#include "policy_engine/report_edge_checks.h"

#include <fmt/format.h>

#include "core/graph_json.h"
#include "policy_engine/answer_service.h"
#include "policy_engine/policy_engine_options.h"
#include "policy_engine/upstream_feed.h"

namespace cincinnati::server {
namespace {

Status NotAnEdge(const UpdateReport& r, std::string_view where) {
  return Status::InvalidArgument(
      fmt::format("{} -> {} is not an update edge of channel {} for {} in {}", r.from, r.to, r.channel, r.arch, where));
}

}  // namespace

ReportEdgeChecks::ReportEdgeChecks(const PolicyEngineOptions& options, const AnswerService& answers, UpstreamFeed& feed,
                                   Registry& metrics)
    : answers_(answers), feed_(feed) {
  ForwardedAnswersOptions checks{options.cache.ttl, options.cache.max_stale, kReportCheckEntries, kReportCheckBytes,
                                 kReportCheckFetchesPerSecond};
  checks.fallback_without_id = false;
  checks_ = feed.NewForwardedCache(checks, metrics.AddCounter("report_edge_checks_throttled_total",
                                                              "Reports' edge checks not fetched from the upstream policy engine: over "
                                                              "their own budget (answered 503)").Get());
}

void ReportEdgeChecks::Check(const UpdateReport& report, std::function<void(Status)> done) {
  if (auto views = answers_.views(); views && ServesSharedGraph(feed_.state())) {
    const bool has = ServedEdgesOf(views)->Has(report.channel, report.arch, report.from, report.to, answers_.Now());
    return done(has ? Status::OK() : NotAnEdge(report, "this service's graph"));
  }
  if (feed_.state() != UpstreamState::kForwarding) return done(Status::IoError("this policy engine has no graph yet"));
  // First the channel's answer for a cluster without an id (one for every report of the
  // channel); only an edge missing there between releases that are there may be in a
  // phased window, visible to some clusters: then the answer this cluster gets.
  CheckForwarded(report, false, [this, report, done = std::move(done)](Result<bool> general) mutable {
    if (!general.ok() || *general) return done(general.ok() ? Status::OK() : general.status());
    CheckForwarded(report, true, [report, done = std::move(done)](Result<bool> own) {
      if (!own.ok()) return done(own.status());
      done(*own ? Status::OK() : NotAnEdge(report, "the upstream policy engine's answer"));
    });
  });
}

void ReportEdgeChecks::CheckForwarded(const UpdateReport& report, bool with_id, std::function<void(Result<bool>)> done) {
  Parameters params = {{"channel", report.channel}, {"arch", report.arch}};
  if (with_id) params.emplace("id", report.cluster_id);
  checks_->Get(ForwardedQueryOf(params, {}), [this, report, with_id, done = std::move(done)](const ForwardedAnswer& answer) {
    if (!answer.view) {
      return done(Status::IoError(fmt::format("the upstream policy engine's answer for channel {}: {}", report.channel,
                                              answer.error ? answer.error->value : "none")));
    }
    std::shared_ptr<const reports::ServedEdges> edges = ForwardedEdgesOf(*answer.view);
    if (!edges) return done(Status::IoError("the upstream policy engine's answer does not parse"));
    if (edges->Has(report.channel, report.arch, report.from, report.to, answers_.Now())) return done(true);
    // A release that is not in the channel's answer at all is in no cluster's.
    if (!with_id && (!edges->HasRelease(report.from) || !edges->HasRelease(report.to))) {
      return done(NotAnEdge(report, "the upstream policy engine's answer"));
    }
    done(false);
  });
}

std::shared_ptr<const reports::ServedEdges> ReportEdgeChecks::ServedEdgesOf(const std::shared_ptr<ViewCache>& views) {
  std::lock_guard lock(mu_);
  if (!served_edges_ || served_views_.lock() != views) {
    // The graph is shared with the views (never copied).
    served_edges_ = std::make_shared<const reports::ServedEdges>(std::shared_ptr<const Graph>(views, &views->graph()));
    served_views_ = views;
  }
  return served_edges_;
}

std::shared_ptr<const reports::ServedEdges> ReportEdgeChecks::ForwardedEdgesOf(const View& answer) {
  {
    std::lock_guard lock(mu_);
    for (const auto& [etag, edges] : forwarded_edges_) {
      if (etag == answer.etag()) return edges;
    }
  }
  auto graph = ReadGraphJson(*answer.body());
  if (!graph.ok()) return nullptr;
  graph->set_served_view(true);  // one channel and arch already
  auto edges = std::make_shared<const reports::ServedEdges>(std::make_shared<const Graph>(std::move(graph).value()));
  std::lock_guard lock(mu_);
  forwarded_edges_.emplace_back(answer.etag(), edges);
  if (forwarded_edges_.size() > kForwardedEdgesKept) forwarded_edges_.erase(forwarded_edges_.begin());
  return edges;
}

}  // namespace cincinnati::server
