// BrakeBoard: the graph builder's automatic brakes. It owns the decision, as the graph
// builder owns the graph: policy engines forward reports to it.
//
// Submit checks each report of a batch against the graph the builder serves (SetGraph;
// served_edges.h: an edge of the report's channel and arch), whatever the policy engine
// that passed it on checked, since it is the one writer: a report on any other edge is
// refused and never recorded, and before the first graph a batch is refused whole (the
// agents retry). It records the rest in the ledger (report_ledger.h) and then evaluates
// every edge the batch touched with the brake rule (brake_rule.h). An edge
// that crosses it is braked at once: the brake is committed to the database
// (<state_dir>/reports.db, table brakes, with an audit trail in brake_events), written
// as a graph-data blocked-edges file for people to review and commit
// (<state_dir>/blocked-edges/<to>-AutomaticallyBlocked_<from>_to_<to>.yaml), and
// OnChange's function is called so that the graph builder publishes a new graph now
// rather than at its next refresh. The risk's message is fixed when the brake is
// decided (the served bytes do not churn with every later report).
//
// A person confirms a brake (it stays until cleared; the file says who confirmed it) or
// clears it: the file is removed, the graph offers the edge again, and the edge's count
// starts afresh, so only attempts that start after the clear can brake it again.
// Everything survives a restart: Open reads the brakes in force and writes their files
// again and removes the files of cleared ones; the first graph then brakes any edge of it
// whose reports crossed the rule just before a crash kept its brake from being saved.
// Per-edge counts in memory are those of the served graph's edges and of brakes
// (ReportLedger::Retain at each graph): what clients send cannot grow them. Times are
// the service's: a brake's first failure is when the first counted failure was received.
// Metrics (prefix of the given registry): reports_received_total{result},
// reports_duplicate_total, reports_off_graph_total, brakes_active,
// brake_actions_total{action}, brake_delay_seconds (first counted failure received to
// brake). Thread-safe; never throws.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/update_report.h"
#include "env/clock.h"
#include "http_server/metrics.h"
#include "reports/brake.h"
#include "reports/brake_rule.h"
#include "reports/report_ledger.h"
#include "reports/report_verdict.h"
#include "reports/served_edges.h"

namespace cincinnati::sqlite {
class Database;
}

namespace cincinnati::reports {

struct BrakeSettings {
  bool enabled = true;  // false: reports are recorded and counted, nothing is braked
  BrakeRule rule;
  std::string url_base;  // https://...: a brake's risk URL is url_base + "/" + from + "-" + to (Open checks it)
  std::vector<std::string> counted_reasons = ReportLedger::Options{}.counted_reasons;
};

enum class BrakeState { kActive, kConfirmed, kCleared };

std::string_view BrakeStateName(BrakeState state);

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

class BrakeBoard {
 public:
  // `state_dir` is created when missing.
  static Result<std::unique_ptr<BrakeBoard>> Open(const std::string& state_dir, BrakeSettings settings, env::Clock& clock,
                                                  http_server::Registry& metrics);
  ~BrakeBoard();
  BrakeBoard(const BrakeBoard&) = delete;
  BrakeBoard& operator=(const BrakeBoard&) = delete;

  // Per report of the batch, in order; an error (no graph yet, a database that fails)
  // records none.
  Result<std::vector<ReportVerdict>> Submit(const std::vector<UpdateReport>& batch);
  // The graph the builder serves now (before its brakes are applied, or after: either has
  // the edges). Reports are checked against it from now on.
  void SetGraph(std::shared_ptr<const ServedEdges> edges);
  std::vector<Brake> InForce() const;     // active and confirmed, as the graph shows them
  std::vector<BrakeRecord> List() const;  // every brake, cleared ones too, by edge
  // NotFound when the edge has no brake in force; `by` names the person (required).
  Status Confirm(const std::string& from, const std::string& to, const std::string& by, const std::string& note);
  Status Clear(const std::string& from, const std::string& to, const std::string& by, const std::string& note);
  // Called after the brakes in force changed (outside the board's lock); an empty
  // function stops the calls, waiting for one under way.
  void OnChange(std::function<void()> fn);
  const ReportLedger& ledger() const { return *ledger_; }
  std::string file_path(const std::string& from, const std::string& to) const;

 private:
  BrakeBoard(std::string state_dir, BrakeSettings settings, env::Clock& clock, http_server::Registry& metrics,
             std::unique_ptr<ReportLedger> ledger, std::unique_ptr<sqlite::Database> db);
  Status Load();
  Status Save(const BrakeRecord& record, std::string_view action);  // under mu_
  Status WriteFile(const BrakeRecord& record);
  Brake BrakeOf(const BrakeRecord& record) const;
  std::optional<BrakeRecord> Decide(const EdgeState& edge, int64_t now) const;
  // Brakes the edges that cross the rule now; true when one was braked.
  bool EvaluateEdges(const std::vector<std::pair<std::string, std::string>>& edges, int64_t now);
  Status ChangeState(const std::string& from, const std::string& to, BrakeState state, const std::string& by,
                     const std::string& note);
  void Changed();

  std::string state_dir_;
  BrakeSettings settings_;
  env::Clock& clock_;
  std::unique_ptr<ReportLedger> ledger_;
  std::unique_ptr<sqlite::Database> db_;
  http_server::Family<http_server::Counter>& received_;
  http_server::Counter& duplicates_;
  http_server::Counter& off_graph_;
  http_server::Gauge& active_;
  http_server::Family<http_server::Counter>& actions_;
  http_server::Histogram& delay_;

  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, BrakeRecord> brakes_;
  std::shared_ptr<const ServedEdges> edges_;  // under mu_; null before the first graph
  bool recovered_ = false;                    // under mu_: the first graph's second look is done
  std::mutex change_mu_;  // held while on_change_ runs
  std::function<void()> on_change_;
};

}  // namespace cincinnati::reports
