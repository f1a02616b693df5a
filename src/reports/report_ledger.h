// ReportLedger: the graph builder's durable record of update reports and of what they
// say per edge. A SQLite file (WAL, synchronous=FULL: a committed batch survives kill -9
// and power loss) with two tables:
//   reports(cluster, attempt, ..., PRIMARY KEY(cluster, attempt))   every report once
//   edge_clusters(from_version, to_version, cluster, failed, component, first_failure,
//                 PRIMARY KEY(from_version, to_version, cluster))     distinct clusters per edge
// A report is recorded at most once per (cluster, attempt): a resend is a duplicate and
// changes nothing. Per edge it counts distinct clusters and, among them, those with a
// counted failure: a Failed report whose reason is one of `counted_reasons` (by default
// a component that degraded or stayed unavailable; a refusal before anything was
// applied, such as a signature that does not verify, says more about the cluster's site
// than about the edge). A cluster that failed an edge and later completed it stays
// counted as failed: it needed rescuing. A cluster counts on one edge out of a version
// only, the first it reported (a cluster updates out of a version once; so one set of
// ids cannot weigh on every edge out of it). RestartEdge starts an edge's count afresh
// (a brake was cleared): from then on only reports received after the restart, of
// attempts that started after it, count (table edge_epochs). A report dated more than
// kMaxClockSkew after it was received is kept but never counted.
//
// Times that decide anything are the service's: a failure counts as of when its report
// was received (first_failure), never the reporter's own dates.
//
// The counts are kept in memory for the edges in use, so reading them costs no I/O: an
// edge's counts are read from the file the first time it is asked for or reported on,
// and Retain drops those of edges the graph no longer has. Memory is O(edges in use x
// components); the file grows by about 300 bytes per report. Thread-safe; never throws.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/update_report.h"
#include "reports/brake_rule.h"
#include "reports/start_order.h"

namespace cincinnati::sqlite {
class Database;
}

namespace cincinnati::reports {

using EdgeKey = std::pair<std::string, std::string>;  // (from, to)

inline constexpr int64_t kMaxClockSkew = 300;  // seconds
// Longer than any update (start_order.h's horizon): how far back a start may be dated.
inline constexpr int64_t kStartHorizon = 2 * 3600;
// `started` within [received - kStartHorizon, received].
int64_t ClampedStart(int64_t started, int64_t received);
// How the ledgers settle attempts in start order: starts announced, kStartHorizon.
StartOrderOptions LedgerStartOrder();
uint64_t AttemptKey(const std::string& cluster);  // the settler's key of a cluster (FNV-1a)
// One row of edge_attempts, and the settler they make, replayed in the order received.
struct AttemptRow {
  std::string cluster;
  int64_t started = 0, announced = 0, failed = -1, resolved = 0;
  bool known_bad = false;
};
std::unique_ptr<StartOrderSettler> ReplayAttempts(const std::vector<AttemptRow>& rows);

struct AttemptStart {
  std::string cluster, attempt;
  int64_t started = 0;   // clamped (ClampedStart)
  int64_t received = 0;
};

struct EdgeState {
  std::string from, to;
  EdgeCounts counts;
  int64_t first_failure = 0;                          // Unix seconds of the earliest counted failure; 0: none
  std::map<std::string, int64_t> failed_components;   // component ("" unknown) -> failed clusters
  // The sequential rule's counts (start_order.h): one per prefix judged.
  std::vector<SequentialCounts> prefixes;
  int64_t recent_attempts = 0;  // started within the horizon: the counts move as time passes
};

class ReportLedger {
 public:
  struct Options {
    std::vector<std::string> counted_reasons = {"ClusterOperatorDegraded", "ClusterOperatorNotAvailable"};
  };
  static Result<std::unique_ptr<ReportLedger>> Open(const std::string& path, Options options);
  static Result<std::unique_ptr<ReportLedger>> Open(const std::string& path) { return Open(path, Options{}); }
  ~ReportLedger();
  ReportLedger(const ReportLedger&) = delete;
  ReportLedger& operator=(const ReportLedger&) = delete;

  enum class Outcome { kRecorded, kDuplicate };
  // Records a batch in one transaction (all or nothing); outcome[i] is batch[i]'s. Every
  // report must pass ValidateUpdateReport. `received`: Unix seconds, the service's clock.
  Result<std::vector<Outcome>> Record(const std::vector<UpdateReport>& batch, int64_t received);

  // The edge's counts (read from the file when not in memory; an error reading it gives
  // none and is logged).
  EdgeState Edge(const std::string& from, const std::string& to) const;
  std::vector<EdgeState> Edges() const;  // the edges whose counts are in memory, by (from, to)
  // Edges of the file with at least one counted failure (a restart's second look).
  Result<std::vector<std::pair<std::string, std::string>>> EdgesWithFailures() const;
  // Keeps in memory only the counts of edges for which keep(from, to) is true.
  void Retain(const std::function<bool(const std::string& from, const std::string& to)>& keep);
  int64_t reports() const;               // recorded reports, Started ones too (duplicates not counted)
  // The Started reports recorded on the edge, by (started, cluster).
  Result<std::vector<AttemptStart>> Starts(const std::string& from, const std::string& to) const;
  bool Counted(const UpdateReport& report) const;  // a failure that counts against its edge
  // Counts the edge again from the reports received, of attempts started, after `since`.
  Status RestartEdge(const std::string& from, const std::string& to, int64_t since);
  // Deletes the reports received before `before` (Unix seconds); the per-edge counts
  // stay. Returns how many went.
  Result<int64_t> Prune(int64_t before);
  // Settles every edge in memory at `now` (attempts crossing the horizon count, stuck
  // ones as failures); returns the edges with attempts started within the horizon.
  // Edges with such attempts in the file only are loaded first.
  Result<std::vector<EdgeKey>> Tick(int64_t now);
  // Moves to `now` every restart more than kMaxClockSkew after it (made on a clock that
  // was ahead), so that reports count again.
  Status ClampEpochs(int64_t now);

 private:
  ReportLedger(std::unique_ptr<sqlite::Database> db, Options options);
  Status Load();
  // The edge's counts in memory, read from the file first when missing (under mu_).
  Result<EdgeState*> Loaded(const EdgeKey& key) const;
  Result<EdgeState> Read(const EdgeKey& key) const;  // from the file (under mu_)
  struct CountStatements;
  // Counts one recorded report against its edge in the open transaction; `edge` is the
  // copy to apply once it commits.
  Status Count(const UpdateReport& r, int64_t received, EdgeState& edge, CountStatements& sql);
  // Records a Started report in the open transaction; false: a duplicate.
  Result<bool> RecordStart(const UpdateReport& r, int64_t received);
  // ledger_attempts.cc: the sequential rule's state.
  struct AttemptEvent {
    EdgeKey edge;
    uint64_t key = 0;
    int64_t started = 0, at = 0;
    bool resolve = false, failed = false, known_bad = false;
  };
  // Tracks a recorded report's attempt in the open transaction; appends what the
  // edge's settler is to hear once it commits.
  Status Track(const UpdateReport& r, int64_t received, std::vector<AttemptEvent>& events);
  Result<std::unique_ptr<StartOrderSettler>> ReadSettler(const EdgeKey& key) const;  // from the file (under mu_)
  void Apply(const std::vector<AttemptEvent>& events);  // to the settlers in memory (under mu_)
  void Settled(EdgeState& edge) const;                  // fills prefixes at now_ (under mu_)
  Status ClearAttempts(const EdgeKey& key);              // in the open transaction (a restart; the settler after it)

  std::unique_ptr<sqlite::Database> db_;
  Options options_;
  mutable std::mutex mu_;
  mutable std::map<EdgeKey, EdgeState> edges_;
  std::map<std::pair<std::string, std::string>, int64_t> epochs_;  // edge -> counted from (Unix seconds)
  int64_t reports_ = 0;
  mutable std::map<EdgeKey, std::unique_ptr<StartOrderSettler>> settlers_;  // the edges of edges_
  int64_t now_ = 0;  // the latest time seen (under mu_)
};

}  // namespace cincinnati::reports
