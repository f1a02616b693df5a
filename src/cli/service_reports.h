// Update reports and automatic brakes in the services: their settings and the
// parts `graph-builder`, `policy-engine` and `serve` run for them.
//
//  - graph-builder and serve keep the reports and decide brakes when `reports.state_dir`
//    is set (brake_board.h). The graph builder takes batches from its policy engines
//    with `reports.token_file`'s token; `brakes.admin_token_file` lets a person confirm
//    or clear a brake.
//  - policy-engine takes agents' reports when `reports.enabled` is true and forwards them
//    to its upstream graph builder (`reports.upstream_url`, by default the upstream's
//    {prefix}/v1/reports) with `reports.upstream_token_file`'s token.
//  - serve takes agents' reports when `reports.state_dir` is set and records them itself.
//  - with `reports.postgres` (or `_file`) the graph builder keeps reports and brakes on
//    PostgreSQL, shared by every replica that names it (postgres_report_store.h);
//    `reports.state_dir` is then optional, where brake files are written for review.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "cli/settings.h"
#include "core/status.h"
#include "env/clock.h"
#include "http_server/metrics.h"
#include "reports/brake_board.h"
#include "reports/report_intake.h"
#include "reports/report_routes.h"
#include "service/periodic_task.h"

namespace cincinnati::cli {

struct ReportFlag {
  std::string names, key, help;
};
std::vector<ReportFlag> ReportFlags(bool graph_builder, bool policy_engine);

// The PostgreSQL URL of `reports.postgres` or `reports.postgres_file`; "" when neither
// is set (each process keeps its own state).
Result<std::string> PostgresUrl(const Settings& s);

struct ReportParts {
  explicit ReportParts(std::string metrics_prefix) : metrics(std::move(metrics_prefix)) {}
  http_server::Registry metrics;
  std::unique_ptr<reports::BrakeBoard> board;        // graph builder and serve
  std::unique_ptr<server::ReportRoutes> routes;      // graph builder and serve: the brakes' API
  std::shared_ptr<server::ReportIntake> intake;      // policy engine and serve: agents' reports
  // Graph builder and serve: the board follows brakes other replicas decide (every
  // second) and prunes old reports (every hour). Last, so that it stops first.
  server::PeriodicTask upkeep;
};

// Null when reports are off for this role. `upstream_url`: a policy engine's upstream.
Result<std::unique_ptr<ReportParts>> SetUpReports(const Settings& s, bool graph_builder, bool policy_engine,
                                                  const std::string& prefix,
                                                  const std::string& upstream_url, env::Clock& clock);

}  // namespace cincinnati::cli

namespace cincinnati::cli {
// `cincinnati brakes list|confirm|clear`: a person's view of the automatic brakes and
// their say over them (registered with the service commands).
void RegisterBrakeCommands(CLI::App& app, int& exit_code);
}  // namespace cincinnati::cli
