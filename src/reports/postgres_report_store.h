// PostgresReportStore: the report store (report_store.h) that graph-builder replicas
// share, on PostgreSQL. The tables are the SQLite store's (reports, edge_clusters,
// edge_epochs, brakes, brake_events with a serial id) and the per-edge totals, created
// when missing.
//
// One decision per brake, without a leader: a batch is one transaction that first takes
// a transaction-scoped advisory lock per edge it reports on and per (from-version,
// cluster) (in one order, so two batches never wait on each other in a circle), then
// records and counts the reports, then, per edge whose brake is not in force (its row
// read FOR UPDATE), reads the edge's counts from the table and saves the brake `decide`
// returns. Two replicas with reports on one edge take turns, and the second sees the
// first's brake; a replica killed mid-batch commits nothing (its agents resend, and the
// resend is counted then). Why not an elected leader: every replica takes reports at
// once with no fail-over gap, and the decision is atomic with the report that crosses
// the rule, which a leader would have to rebuild after a crash.
//
// Counts are read from the database each time (no memory per edge: other replicas
// change them), from per-edge totals (edge_counts, edge_components) that each batch
// moves in its transaction: a decision costs two short reads whatever the edge's size.
// One connection, used by one caller at a time; statements time out after
// 10 s, so a stalled database fails a batch (503 to the agent, which retries) instead of
// holding it.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "postgres/postgres_session.h"
#include "reports/report_store.h"

namespace cincinnati::reports {

class PostgresReportStore final : public ReportStore {
 public:
  static Result<std::unique_ptr<PostgresReportStore>> Open(const std::string& conninfo, ReportLedger::Options options);
  ~PostgresReportStore() override;

  Result<Recorded> Record(const std::vector<UpdateReport>& batch, int64_t received, const Decide& decide) override;
  Result<std::vector<BrakeRecord>> Reconsider(const std::vector<EdgeKey>& edges, const Decide& decide) override;
  Result<std::vector<BrakeRecord>> Brakes() const override;
  Result<BrakeRecord> ChangeState(const EdgeKey& edge, BrakeState state, const std::string& by, const std::string& note,
                                  std::string_view action, int64_t now) override;
  Result<int64_t> ChangeMark() const override;
  Result<int64_t> Prune(int64_t before) override;
  Status ClampEpochs(int64_t now) override;
  EdgeState Edge(const std::string& from, const std::string& to) const override;
  Result<std::vector<EdgeKey>> Tick(int64_t now) override;
  Result<std::vector<EdgeKey>> EdgesWithFailures() const override;
  void Retain(const std::function<bool(const std::string&, const std::string&)>&) override {}
  std::vector<EdgeState> Edges() const override { return {}; }
  int64_t reports() const override;
  std::string Describe() const override { return described_; }

 private:
  PostgresReportStore(const std::string& conninfo, ReportLedger::Options options);
  class Batch;  // postgres_report_store.cc: one transaction's statements

  ReportLedger::Options options_;
  std::string described_;
  mutable std::mutex mu_;
  mutable postgres::PostgresSession session_;  // under mu_
  int64_t now_ = 0;  // under mu_: the latest time seen (a batch's receipt, or Tick); attempts are settled there
};

}  // namespace cincinnati::reports
