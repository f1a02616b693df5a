// MakeReportRelay: a policy engine's sink that forwards update reports to its graph builder,
// which owns the decision as it owns the graph. Reports queue (at most
// 10,000; beyond, refused at once and the agent retries) and leave in batches of up to
// 256 on a thread of its own (report_batches.h): POST `url` (the graph builder's {prefix}/v1/reports) with
// a JSON array, "Authorization: Bearer <token>", a timeout. Each agent is answered only
// once the graph builder has committed its report, so a policy engine killed meanwhile
// loses nothing: the agent saw no 2xx and sends it again. Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "reports/report_intake.h"

namespace cincinnati::server {

struct ReportRelayOptions {
  std::string url;    // the graph builder's POST {prefix}/v1/reports
  std::string token;  // its reports token
  std::string ca_path;
  std::chrono::milliseconds timeout{10000};
};

std::shared_ptr<ReportSink> MakeReportRelay(ReportRelayOptions options);

// The graph builder's reports URL for a policy engine whose upstream is `upstream_url`
// ("http://gb:8080/graph" -> "http://gb:8080/v1/reports"; the query is dropped).
std::string ReportsUrlFor(const std::string& upstream_url);

}  // namespace cincinnati::server
