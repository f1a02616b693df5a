// The graph builder's side of update reports and brakes:
//
//  - MakeBoardSink: a policy engine's sink for the brake board in the same process
//    (`serve`), batching (report_batches.h): one commit per batch, and the HTTP
//    threads never wait for the disk.
//  - ReportRoutes, on the graph builder's main listener (and serve's):
//      POST {prefix}/v1/reports   a batch from a policy engine: a JSON array of at most
//                                 256 reports, bearer token `batch_token` (graph builder
//                                 only: on `serve` this path is the agents' door);
//                                 answers {"results":["accepted"|"duplicate"|
//                                 "refused: <why>", ...]} (refused: not an edge of the
//                                 graph builder's graph), or 503 before its first graph
//      GET  {prefix}/v1/brakes    every brake with its counts and state (who confirmed or
//                                 cleared it only with the admin token)
//      GET  {prefix}/v1/brakes/FROM-TO   one brake (a brake's risk URL)
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
#include "reports/report_intake.h"

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
  ReportRoutes(reports::BrakeBoard& board, ReportRoutesOptions options);
  // A policy engine's batch (graph builder): false when the request is not one; else
  // `respond` is called once, after the batch is recorded on the board's writer thread.
  bool HandleBatch(const http_server::Request& request, const std::function<void(http_server::Response)>& respond);
  // The brakes' API; nullopt: not one of its paths.
  std::optional<http_server::Response> HandleBrakes(const http_server::Request& request);

 private:
  http_server::Response List(const http_server::Request& request, const std::string& edge);
  http_server::Response Change(const http_server::Request& request, bool clear);
  reports::BrakeBoard& board_;
  ReportRoutesOptions options_;
  std::shared_ptr<ReportSink> writer_;  // batches are recorded here, never on an HTTP thread
};

// The brakes as GET {prefix}/v1/brakes answers them; who confirmed or cleared them, and
// why, only for `with_people` (a request with the admin token).
std::string BrakesJson(const std::vector<reports::BrakeRecord>& brakes, bool with_people);

}  // namespace cincinnati::server
