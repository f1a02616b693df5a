// ReportIntake: a policy engine's door for update reports, POST {prefix}/v1/reports. An
// agent sends one report per update attempt (core/update_report.h) with ?id=<its cluster
// id>; the intake checks it, in this order, and hands it to its sink (the graph builder's
// brake board, in process or over HTTP):
//   1. a JSON body of at most 4 KiB                          413 too_large, 415 not_json
//   2. a valid report whose clusterID is the query's id,     400 invalid_report
//      whose times are not in the service's future (+5 min)
//   3. the id has polled at `from` (the version it updated   403 unknown_poller
//      from) at least min_polls times, first min_poller_age
//      or more ago and last within the window: as this
//      engine's PollSightings saw it (only answered polls
//      count), or as the report's Cincinnati-Poll-Receipt
//      header proves it (poll_receipt.h: made by any replica
//      sharing this one's key, for this id and `from`)
//   4. within the id's daily allowance (per_cluster_per_day) 429 rate_limited
//      (kept with the id's sightings; for an id admitted by
//      its receipt alone, in a table of the day's such ids,
//      at most 65,536 or `sightings` / 4 of them, whichever
//      is more: when it is full, 429 until the next day)
//   5. within the global rate (max_per_second, a bucket;     429 rate_limited
//      the id's allowance is given back)
//      (429s carry Retry-After: 60)
//   6. an edge from -> to of the report's channel and arch   400 invalid_report,
//      in a graph this engine has (SetEdgeCheck: its own     503 report_not_recorded
//      graph, or for a forwarding engine the answer its      when it has none to check
//      upstream gives that cluster, on a budget of its own)  against (the agent retries)
// Answers: 200 {"status":"accepted"|"duplicate"}; 400 when the graph builder refuses it
// (it checks every report against its own graph again); refusals are the reference's
// error document {"kind": ..., "value": ...}; 503 when the sink fails (the agent
// retries). A duplicate and a report the sink could not record give the day's allowance
// back (a resend costs nothing); one refused at the edge check does not, so that one id
// cannot make the engine check edges, or use up the global rate, without limit. A
// Started report (an attempt announced) passes the same steps and is charged to the same
// allowance as a final one: it costs the same work, and an announced attempt that never
// ends counts as a failure past the horizon (start_order.h), so uncharged starts would
// be a free way to make failures; an attempt costs 2 of the 24 a day. A refused report is counted in
// cincinnati_pe_reports_refused_total{reason}. So flooding does not brake an edge:
// reports need ids that have polled at the edge's source for a while, on an edge that
// exists where the report says, each id reports a few times a day, every id counts once
// per edge and on one edge out of a version (report_ledger.h), and a brake needs
// failures from at least min_clusters of them. What remains (an attacker patient enough
// to poll with many ids for half an hour) is stated in docs/reports-and-brakes.md. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/status.h"
#include "core/update_report.h"
#include "reports/report_verdict.h"
#include "env/clock.h"
#include "http_server/http_types.h"
#include "http_server/metrics.h"
#include "reports/poll_receipt.h"
#include "reports/poll_sightings.h"

namespace cincinnati::server {

using http_server::Family;
using http_server::Counter;

// Where accepted reports go. `done` is called once, from any thread: the graph builder's
// verdict, or the error that kept the report from being recorded.
class ReportSink {
 public:
  virtual ~ReportSink() = default;
  virtual void Submit(UpdateReport report, std::function<void(Result<reports::ReportVerdict>)> done) = 0;
};

// Checks a report's edge (step 6): `done` is called once, maybe on another thread, with
// OK, InvalidArgument (no such edge: 400), or another error (nothing to check against:
// 503).
using EdgeCheck = std::function<void(const UpdateReport& report, std::function<void(Status)> done)>;

// How far in the future a report's times may be (clocks disagree a little).
inline constexpr int64_t kClockSkew = 300;

struct ReportIntakeOptions {
  int64_t sighting_window_secs = 86400;
  int64_t min_poller_age_secs = 1800;
  int min_polls = 3;  // polls at that version
  int per_cluster_per_day = 24;
  double max_per_second = 500;
  size_t sightings = 1 << 20;  // ids remembered (poll_sightings.h)
};

class ReportIntake {
 public:
  // `receipts`: the key replicas behind one address share (step 3); a random one serves a
  // lone replica.
  ReportIntake(std::shared_ptr<ReportSink> sink, ReportIntakeOptions options, env::Clock& clock,
               http_server::Registry& metrics, PollReceipts receipts = PollReceipts::Random());

  // Every graph request with an id and a version (the policy engine's hot path).
  // Returns when it was seen (Unix seconds), for the adoption curves drawn from the
  // sightings (policy_engine/adoption_history.h).
  int64_t SawPoll(std::string_view id, std::string_view version);
  const PollSightings& sightings() const { return sightings_; }
  // What answers a poll's Cincinnati-Poll-Receipt header (the policy engine's graph path).
  const PollReceipts& receipts() const { return receipts_; }
  // Step 6; unset: every report is refused with 503 (no graph to check against).
  void SetEdgeCheck(EdgeCheck check) { edge_check_ = std::move(check); }
  // POST {prefix}/v1/reports; `respond` is called once.
  void Handle(const http_server::Request& request, std::function<void(http_server::Response)> respond);

 private:
  // Who vouches for a report's sender (step 3), and so keeps its allowance (step 4).
  enum class Voucher { kNone, kSightings, kReceipt };
  Voucher Admit(const http_server::Request& request, const UpdateReport& report, int64_t now) const;
  bool Charge(const std::string& id, Voucher voucher, int64_t now);
  void Refund(const std::string& id, Voucher voucher, int64_t now);
  int64_t UnixNow() const;
  bool TakeToken();
  http_server::Response Refuse(int status, const std::string& kind, const std::string& message);
  http_server::Response RateLimited(const std::string& message);  // 429 with Retry-After
  // Step 6 and the sink, once steps 1 to 5 passed.
  void CheckEdgeAndSubmit(UpdateReport report, Voucher voucher, int64_t now, std::function<void(http_server::Response)> respond);
  void Submit(UpdateReport report, Voucher voucher, int64_t now, std::function<void(http_server::Response)> respond);

  std::shared_ptr<ReportSink> sink_;
  EdgeCheck edge_check_;
  ReportIntakeOptions options_;
  env::Clock& clock_;
  PollSightings sightings_;
  PollReceipts receipts_;
  // Step 4 for ids admitted by their receipt alone: reports today, by id.
  struct ReceiptAllowance {
    std::mutex mu;
    int64_t day = -1;
    std::unordered_map<std::string, int> reports;
  } receipt_allowance_;
  Counter& accepted_;
  Family<Counter>& refused_;
  std::mutex bucket_mu_;
  double tokens_;
  env::Clock::SteadyTime refilled_;
};

}  // namespace cincinnati::server
