// BrakeBoard: the graph builder's automatic brakes. It owns the decision, as the graph
// builder owns the graph: policy engines forward reports to it.
//
// Submit checks each report of a batch against the graph the builder serves (SetGraph;
// served_edges.h: an edge of the report's channel and arch), whatever the policy engine
// that passed it on checked, since it is the one writer: a report on any other edge is
// refused and never recorded, and before the first graph a batch is refused whole (the
// agents retry). It hands the rest to its store (report_store.h: SQLite for one process,
// PostgreSQL shared by replicas), which records them and decides, with the brake rule
// (brake_rule.h), every edge the batch touched: an edge that crosses it is braked at
// once, committed with its audit trail, written as a graph-data blocked-edges file for
// people to review and commit (<files_dir>/blocked-edges/<to>-AutomaticallyBlocked_<from>
// _to_<to>.yaml; no files without a files_dir), and OnChange's function is called so
// that the graph builder publishes a new graph now rather than at its next refresh. The
// risk's message is fixed when the brake is decided (the served bytes do not churn with
// every later report). The rule is BrakeSettings::kind's: the Wilson bound over distinct
// clusters, or the sequential test over attempts in start order (its message states the
// edge's failure rate and that of the known-bad sites kept apart); with the latter,
// Redecide judges edges again as attempts cross the horizon without a report.
//
// A person confirms a brake (it stays until cleared; the file says who confirmed it) or
// clears it: the file is removed, the graph offers the edge again, and the edge's count
// starts afresh, so only attempts that start after the clear can brake it again.
// Everything survives a restart: Open reads the brakes in force (before the first graph
// is built, so a restarted replica never serves a graph without them), writes their
// files again and removes the files of cleared ones; the first graph then brakes any
// edge of it whose reports crossed the rule just before a crash kept its brake from
// being saved. With replicas, Follow (called about every second) reads the brakes again
// when the store's change mark moved, so a brake decided or cleared by another replica
// is served here within that period. Prune deletes reports older than the retention.
// Times are the service's: a brake's first failure is when the first counted failure
// was received.
// Metrics (prefix of the given registry): reports_received_total{result} (Completed,
// Failed, Started),
// reports_duplicate_total, reports_off_graph_total, brakes_active,
// brake_actions_total{action}, brake_delay_seconds (first counted failure received to
// brake), reports_pruned_total. Thread-safe; never throws.
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
#include "reports/report_store.h"
#include "reports/report_verdict.h"
#include "reports/sequential_brake.h"
#include "reports/served_edges.h"

namespace cincinnati::reports {

// Which rule decides: the sequential test in start order (the default; sequential_brake.h,
// start_order.h: its false-brake probability holds over the whole rollout), or the
// Wilson lower bound on every report (brake_rule.h: simpler, but checked after every
// report its false-brake probability grows with the rollout).
enum class BrakeRuleKind { kWilson, kSequential };
// "sequential" or "wilson"; anything else is InvalidArgument naming brakes.rule.
Result<BrakeRuleKind> ParseBrakeRuleKind(std::string_view name);
std::string_view BrakeRuleKindName(BrakeRuleKind kind);

struct BrakeSettings {
  bool enabled = true;  // false: reports are recorded and counted, nothing is braked
  BrakeRuleKind kind = BrakeRuleKind::kSequential;
  BrakeRule rule;
  MixturePrior prior;  // the sequential rule's
  std::string url_base;  // https://...: a brake's risk URL is url_base + "/" + from + "-" + to (Open checks it)
  std::vector<std::string> counted_reasons = ReportLedger::Options{}.counted_reasons;
};

class BrakeBoard {
 public:
  // One process: a SQLite store in `state_dir` (created when missing), files there too.
  static Result<std::unique_ptr<BrakeBoard>> Open(const std::string& state_dir, BrakeSettings settings, env::Clock& clock,
                                                  http_server::Registry& metrics);
  // Any store; `files_dir` empty: no brake files are written.
  static Result<std::unique_ptr<BrakeBoard>> Open(std::unique_ptr<ReportStore> store, const std::string& files_dir,
                                                  BrakeSettings settings, env::Clock& clock, http_server::Registry& metrics);
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
  // Reads the brakes again when another writer changed them; true when those in force
  // changed (OnChange's function has been called).
  bool Follow();
  // The sequential rule: judges again, at the clock's now, the edges with attempts
  // started within the horizon (attempts cross it without a report: a stuck one is a
  // failure); returns the brakes it applied. Called about once a minute; nothing with
  // the Wilson rule or brakes off.
  Result<std::vector<BrakeRecord>> Redecide();
  // Deletes the reports received more than `retention_secs` ago; returns how many.
  Result<int64_t> Prune(int64_t retention_secs);
  const ReportStore& store() const { return *store_; }
  std::string file_path(const std::string& from, const std::string& to) const;

 private:
  BrakeBoard(std::string files_dir, BrakeSettings settings, env::Clock& clock, http_server::Registry& metrics,
             std::unique_ptr<ReportStore> store);
  Status Load();
  void WriteFiles(const std::map<EdgeKey, BrakeRecord>& before);  // brings the files in line with brakes_ (under mu_)
  Status WriteFile(const BrakeRecord& record);
  Brake BrakeOf(const BrakeRecord& record) const;
  std::optional<BrakeRecord> Decide(const EdgeState& edge, int64_t now) const;
  std::optional<BrakeRecord> DecideSequential(const EdgeState& edge, int64_t now) const;
  void Applied(std::vector<BrakeRecord> braked, int64_t now);  // brakes a store saved: files, logs, metrics
  Status ChangeState(const std::string& from, const std::string& to, BrakeState state, const std::string& by,
                     const std::string& note);
  void Changed();
  void CountActive();  // under mu_

  std::string files_dir_;
  BrakeSettings settings_;
  env::Clock& clock_;
  std::unique_ptr<ReportStore> store_;
  http_server::Family<http_server::Counter>& received_;
  http_server::Counter& duplicates_;
  http_server::Counter& off_graph_;
  http_server::Gauge& active_;
  http_server::Family<http_server::Counter>& actions_;
  http_server::Histogram& delay_;
  http_server::Counter& pruned_;

  mutable std::mutex mu_;
  std::map<EdgeKey, BrakeRecord> brakes_;     // under mu_: as last read or saved
  int64_t mark_ = -1;                         // under mu_: the store's change mark brakes_ reflects
  uint64_t local_changes_ = 0;                // under mu_: brakes this board applied or changed
  std::shared_ptr<const ServedEdges> edges_;  // under mu_; null before the first graph
  bool recovered_ = false;                    // under mu_: the first graph's second look is done
  std::mutex change_mu_;  // held while on_change_ runs
  std::function<void()> on_change_;
};

}  // namespace cincinnati::reports
