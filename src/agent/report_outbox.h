// ReportOutbox: the agent's update reports (core/update_report.h) on their
// way to the update service: per update attempt, a Started report when it begins and
// the final one when it ends.
//
// Contract:
// - Queue: Enqueue writes the report to <state-dir>/reports/<attempt id>.json through
//   the ObjectStore (kind "reports"; a durable write) before it returns OK, and nothing
//   but that file holds it: a kill -9 at any moment loses no report that was queued,
//   and the next process sends what it finds. Queuing an attempt again rewrites the
//   same file, and a report sent twice carries the same (clusterID, attempt), which
//   the service de-duplicates. A Started report is <attempt id>-started.json; queuing
//   the attempt's final report removes it if it is still there (the final report says
//   when the attempt started too, and a start that came after its end would say
//   nothing). StartQueued says whether this process queued the attempt's start (kept
//   in memory: a restarted agent queues it again, and the service takes it once). The file is the report's JSON, plus, when the attempt
//   kept one, the poll receipt of its from-version as "pollReceipt" (a file without it,
//   an older agent's, reads as before).
// - Send (SendDue): at most `max_per_pass` tries a pass, by name. Each is a POST to
//   `<url>?id=<clusterID>` (the same key a poll carries, for a balancer's affinity),
//   Content-Type application/json, the receipt as Cincinnati-Poll-Receipt when the
//   file has a header-safe one (poll_receipt_book.h: it proves the polls to a replica
//   that did not see them), the encoded report, bounded by `timeout`, with the
//   agent's CA directory, cancelled by `stop`; redirects are not followed.
//     2xx: the file is deleted (sent).
//     no answer, 3xx, 429 or 5xx: the endpoint backs off (the pass stops there), for
//       Retry-After when the answer has one, else 30 s doubling at each failure in a
//       row up to 1 h, drawn in [half, whole] from an RNG seeded by `seed` (a dead
//       service costs one timeout a pass, and a fleet does not come back in step).
//     403 whose JSON says "unknown_poller" (as "reason" or "kind"; the replica that
//       answered has not seen this cluster poll yet): that report alone backs off so.
//     any other 4xx: the report is dropped, logged once, counted (reason "rejected").
//   A report that ended (a Started one: started) more than `max_age` ago is dropped
//   unsent ("expired"); a file
//   that does not read back as a valid report is dropped ("invalid"). Back-off is kept
//   in memory: a restarted agent tries at once. Time is the injected clock's.
// - ReportOfAttempt builds the report of an ended attempt; a field the wire format
//   refuses (a channel or component name outside its alphabet) is left empty, and an
//   attempt that cannot make a valid report at all (no target version known) is an
//   error the caller counts with CountDropped("invalid").
//
// Thread-safety: Enqueue from one thread (the update loop), SendDue and NextDue from
// another (the retrieval loop), stats() and CountDropped from any. No lock is held
// during network or disk I/O. Never throws.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>

#include "agent/object_store.h"
#include "agent/storage_health.h"
#include "agent/update_progress.h"
#include "core/update_report.h"
#include "env/clock.h"

namespace cincinnati::agent {

struct ReportOutboxOptions {
  std::string url;      // the update service's reports endpoint; "": reports are off
  std::string ca_dir;   // extra CA certificates (the agent's --upstream.root_certificate_dir)
  std::chrono::milliseconds timeout{5000};
  std::chrono::seconds max_age{7 * 24 * 3600};
  std::chrono::seconds first_backoff{30};
  std::chrono::seconds max_backoff{3600};
  size_t max_per_pass = 8;
  uint64_t seed = 0;    // the back-off's jitter; 0: a random seed
  std::stop_token stop{};
};

// The report of `attempt` (an UpdateProgress whose attempt has ended) for `cluster_id`.
Result<UpdateReport> ReportOfAttempt(const UpdateProgress& attempt, const std::string& cluster_id);
// The Started report of `attempt` (begun, not ended); `now` (Unix seconds) dates it when
// the progress has no readable start.
Result<UpdateReport> ReportOfStart(const UpdateProgress& attempt, const std::string& cluster_id, int64_t now);

class ReportOutbox {
 public:
  // Lists what an earlier process left queued. `clock` and `store` outlive the outbox;
  // `storage` (optional) hears of every queuing write's outcome.
  ReportOutbox(ObjectStore& store, ReportOutboxOptions options, env::Clock& clock, StorageHealth* storage = nullptr);

  // `poll_receipt`: the receipt of the attempt's polls at `from` ("": none).
  Status Enqueue(const UpdateReport& report, const std::string& poll_receipt = "");
  bool StartQueued(const std::string& attempt);
  // Sends the reports that are due; returns how many tries it made.
  size_t SendDue();
  // When the next report is due (time_point::max() when none is queued).
  std::chrono::system_clock::time_point NextDue();

  struct Stats {
    int64_t pending = 0, sent = 0, send_errors = 0;
    int64_t rejected = 0, expired = 0, invalid = 0;  // dropped, by reason
  };
  Stats stats();
  void CountDropped(std::string_view reason);  // "rejected", "expired" or "invalid"

 private:
  struct Entry {
    int failures = 0;  // unknown_poller answers in a row
    std::chrono::system_clock::time_point next{};
  };
  enum class Outcome { kSent, kEndpointFailed, kReportFailed, kDropped };

  Outcome SendOne(const std::string& name);
  Outcome Send(const std::string& name, const UpdateReport& report, const std::string& poll_receipt);
  // [half, whole] of the back-off after `failures` failures in a row, or Retry-After.
  std::chrono::seconds Delay(int failures, std::optional<std::chrono::seconds> retry_after);
  void Forget(const std::string& name, std::string_view dropped_reason);

  ObjectStore& store_;
  ReportOutboxOptions options_;
  env::Clock& clock_;
  StorageHealth* storage_;
  std::mutex mu_;
  std::map<std::string, Entry> queued_;  // by file name (the attempt id, "-started" for a start)
  std::string last_start_;               // the attempt whose start this process queued last (mu_)
  std::chrono::system_clock::time_point endpoint_next_{};  // no try before (mu_)
  int endpoint_failures_ = 0;            // in a row; the sending thread only, as rng_
  std::mt19937_64 rng_;
  std::atomic<int64_t> sent_{0}, send_errors_{0}, rejected_{0}, expired_{0}, invalid_{0};
};

}  // namespace cincinnati::agent
