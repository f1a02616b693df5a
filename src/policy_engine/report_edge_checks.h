// ReportEdgeChecks: whether an update report's edge is one a policy engine serves (the
// report intake's edge check, reports/report_intake.h): one of the shared graph's edges in the
// report's channel and for its arch (reports/served_edges.h, indexed on the first report
// after each graph), or, for an engine that forwards client queries, one of the answer
// its upstream gives the report's cluster. Those answers are fetched on the upstream
// feed's pool into a cache of their own, on a budget of their own (kReportCheckEntries
// queries, kReportCheckBytes, kReportCheckFetchesPerSecond fetches a second; over it the
// check fails, counted in report_edge_checks_throttled_total), so that reports naming
// made-up channels never spend the clients' fetches; each distinct answer is parsed once
// (the last kForwardedEdgesKept kept). Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/update_report.h"
#include "http_server/metrics.h"
#include "policy_engine/forwarded_answers.h"
#include "reports/served_edges.h"
#include "service/http_names.h"
#include "service/view_cache.h"

namespace cincinnati::server {

struct PolicyEngineOptions;
class AnswerService;
class UpstreamFeed;

class ReportEdgeChecks {
 public:
  // `answers` and `feed` outlive it.
  ReportEdgeChecks(const PolicyEngineOptions& options, const AnswerService& answers, UpstreamFeed& feed, Registry& metrics);

  // OK, InvalidArgument naming what is not there, or an error when there is nothing to
  // check against (no graph yet). `done` may be called on a fetch thread.
  void Check(const UpdateReport& report, std::function<void(Status)> done);

  static constexpr size_t kReportCheckEntries = 256;
  static constexpr size_t kReportCheckBytes = 32u << 20;
  static constexpr double kReportCheckFetchesPerSecond = 5;
  static constexpr size_t kForwardedEdgesKept = 16;

 private:
  // The shared graph's edges, indexed once per graph.
  std::shared_ptr<const reports::ServedEdges> ServedEdgesOf(const std::shared_ptr<ViewCache>& views);
  // Whether the upstream's answer to the report's channel and arch (and its cluster's id
  // when `with_id`) has its edge; an error when it cannot be had, InvalidArgument when
  // no cluster's answer can have it.
  void CheckForwarded(const UpdateReport& report, bool with_id, std::function<void(Result<bool>)> done);
  std::shared_ptr<const reports::ServedEdges> ForwardedEdgesOf(const View& answer);

  const AnswerService& answers_;
  const UpstreamFeed& feed_;
  std::unique_ptr<ForwardedAnswers> checks_;
  std::mutex mu_;
  std::weak_ptr<ViewCache> served_views_;                    // under mu_
  std::shared_ptr<const reports::ServedEdges> served_edges_;  // under mu_
  std::vector<std::pair<std::string, std::shared_ptr<const reports::ServedEdges>>> forwarded_edges_;  // under mu_, newest last
};

}  // namespace cincinnati::server
