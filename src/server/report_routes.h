// The graph builder's side of update reports and brakes (issue 31):
//
//  - MakeBoardSink: a policy engine's sink for the brake board in the same process
//    (`serve`), batching (report_batches.h): one commit per batch, and the HTTP
//    threads never wait for the disk.
//  - ReportRoutes, on the graph builder's main listener (and serve's):
//      POST {prefix}/v1/reports   a batch from a policy engine: a JSON array of at most
//                                 256 reports, bearer token `batch_token` (graph builder
//                                 only: on `serve` this path is the agents' door);
//                                 answers {"results":["accepted"|"duplicate", ...]}
//      GET  {prefix}/v1/brakes    every brake with its counts and state
//      POST {prefix}/v1/brakes/confirm and .../clear   {"from","to","by","note"},
//                                 bearer token `admin_token`, Content-Type application/json
//    Without an admin token, confirm and clear answer 403: a brake is only lifted by
//    someone who can prove who they are.
// Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "http_server/http_types.h"
#include "reports/brake_board.h"
#include "server/report_intake.h"

namespace cincinnati::server {

// The brake board in the same process as the intake (serve).
std::shared_ptr<ReportSink> MakeBoardSink(reports::BrakeBoard& board);

struct ReportRoutesOptions {
  std::string path_prefix;
  bool batches = false;     // serve POST {prefix}/v1/reports batches (the graph builder)
  std::string batch_token;  // required for batches
  std::string admin_token;  // required for confirm and clear
};

class ReportRoutes {
 public:
  ReportRoutes(reports::BrakeBoard& board, ReportRoutesOptions options) : board_(board), options_(std::move(options)) {}
  // nullopt: not one of its paths.
  std::optional<http_server::Response> Handle(const http_server::Request& request);

 private:
  http_server::Response Batch(const http_server::Request& request);
  http_server::Response List();
  http_server::Response Change(const http_server::Request& request, bool clear);
  reports::BrakeBoard& board_;
  ReportRoutesOptions options_;
};

// The brakes as GET {prefix}/v1/brakes answers them.
std::string BrakesJson(const std::vector<reports::BrakeRecord>& brakes);

}  // namespace cincinnati::server
