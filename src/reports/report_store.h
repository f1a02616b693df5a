// ReportStore: where the graph builder keeps update reports, per-edge counts, brakes
// and their audit trail (brake_board.h decides; a store records). Two stores:
//   - SQLite (sqlite_report_store.h): one file, one process: `serve` and a single
//     graph builder (reports.state_dir);
//   - PostgreSQL (postgres_report_store.h): one database that every graph-builder
//     replica behind one address shares (reports.postgres), so that they count the same
//     reports and serve the same brakes.
//
// The contract both keep:
//   - Record stores a batch (a report at most once per (cluster, attempt): a resend is a
//     duplicate) and counts it per edge as report_ledger.h says; then, for each edge a
//     recorded report counted on and whose brake is not in force, it calls `decide` with
//     the edge's counts and saves the brake `decide` returns (action "applied"). A brake
//     is decided once: with several writers, the counts `decide` sees and the save are
//     serialized per edge (the PostgreSQL store decides in the report's transaction).
//     A Started report is kept once per attempt and counted only by the sequential
//     rule's state (report_ledger.h: attempts per edge in start order, in both stores);
//     EdgeState's `prefixes` are that state settled at the latest time the store has
//     seen, moved on by Tick.
//   - Reconsider does the same for edges named (a restart's second look at edges with
//     counted failures, when a crash came between a report and its brake).
//   - ChangeState confirms or clears a brake in force (NotFound otherwise), changing only
//     its state, who and why; a clear
//     restarts the edge's count from `now` (only attempts started after it count) in
//     the same step or before it, never after: a crash leaves the brake in force.
//   - ChangeMark grows with every change to the brakes by any writer: a replica that
//     sees it move reads Brakes() again.
//   - Prune deletes reports received before `before`; counts and brakes stay.
// Times are Unix seconds of the service's clock. Thread-safe; never throws.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/update_report.h"
#include "reports/brake_rule.h"
#include "reports/report_ledger.h"

namespace cincinnati::reports {


enum class BrakeState { kActive, kConfirmed, kCleared };

std::string_view BrakeStateName(BrakeState state);
BrakeState BrakeStateOf(std::string_view name);  // "active" for any unknown name
inline bool InForceState(BrakeState s) { return s != BrakeState::kCleared; }

struct BrakeRecord {
  std::string from, to;
  BrakeState state = BrakeState::kActive;
  int64_t since = 0;          // Unix seconds: decided
  int64_t first_failure = 0;  // Unix seconds: the earliest counted failure then
  EdgeCounts counts;          // when decided
  double lower_bound = 0;     // when decided
  std::string message;        // the risk's message
  std::string evidence;       // failed clusters per component, for the file's reader
  std::string by, note;       // who last confirmed or cleared it, and why
};

class ReportStore {
 public:
  using Decide = std::function<std::optional<BrakeRecord>(const EdgeState& edge)>;
  struct Recorded {
    std::vector<ReportLedger::Outcome> outcomes;  // per report of the batch
    std::vector<BrakeRecord> braked;              // brakes saved by this call
  };

  virtual ~ReportStore() = default;
  // Every report must pass ValidateUpdateReport; `received` is the service's now.
  virtual Result<Recorded> Record(const std::vector<UpdateReport>& batch, int64_t received, const Decide& decide) = 0;
  virtual Result<std::vector<BrakeRecord>> Reconsider(const std::vector<EdgeKey>& edges, const Decide& decide) = 0;
  virtual Result<std::vector<BrakeRecord>> Brakes() const = 0;  // every brake, cleared ones too
  // Sets a brake's state, who and why (the rest of its record stays as stored) and logs
  // the action; returns the record as it is now.
  virtual Result<BrakeRecord> ChangeState(const EdgeKey& edge, BrakeState state, const std::string& by, const std::string& note,
                                          std::string_view action, int64_t now) = 0;
  virtual Result<int64_t> ChangeMark() const = 0;
  virtual Result<int64_t> Prune(int64_t before) = 0;  // reports deleted
  // Restarts of a count made while the clock was ahead are moved to `now`.
  virtual Status ClampEpochs(int64_t now) = 0;

  // The edge's counts; its sequential counts (`prefixes`) settled at the latest time the
  // store has seen.
  virtual EdgeState Edge(const std::string& from, const std::string& to) const = 0;
  // Moves the store's time to `now` (attempts cross the horizon without a report);
  // returns the edges whose counts may have moved: attempts started within the horizon.
  virtual Result<std::vector<EdgeKey>> Tick(int64_t now) = 0;
  virtual Result<std::vector<EdgeKey>> EdgesWithFailures() const = 0;
  // Counts kept in memory only for edges `keep` names (a store that keeps none ignores it).
  virtual void Retain(const std::function<bool(const std::string& from, const std::string& to)>& keep) = 0;
  virtual std::vector<EdgeState> Edges() const = 0;  // the counts kept in memory (none for a store that keeps none)
  virtual int64_t reports() const = 0;  // reports recorded (a store that cannot tell: -1)
  virtual std::string Describe() const = 0;  // for logs: the file, or the database without its password
};

}  // namespace cincinnati::reports
