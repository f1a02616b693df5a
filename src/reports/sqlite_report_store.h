// SqliteReportStore: the report store of one process (report_store.h): the report
// ledger (report_ledger.h) and the brakes in one SQLite file, <state_dir>/reports.db
// (tables brakes and brake_events beside the ledger's). It is the file's only writer,
// so a brake's decision needs no lock beyond the store's: Record commits the reports,
// then decides and saves each edge's brake in a transaction of its own (a crash between
// the two is what Reconsider, the first graph's second look, is for).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "reports/report_store.h"

namespace cincinnati::sqlite {
class Database;
}

namespace cincinnati::reports {

class SqliteReportStore final : public ReportStore {
 public:
  static Result<std::unique_ptr<SqliteReportStore>> Open(const std::string& path, ReportLedger::Options options);
  ~SqliteReportStore() override;

  Result<Recorded> Record(const std::vector<UpdateReport>& batch, int64_t received, const Decide& decide) override;
  Result<std::vector<BrakeRecord>> Reconsider(const std::vector<EdgeKey>& edges, const Decide& decide) override;
  Result<std::vector<BrakeRecord>> Brakes() const override;
  Result<BrakeRecord> ChangeState(const EdgeKey& edge, BrakeState state, const std::string& by, const std::string& note,
                                  std::string_view action, int64_t now) override;
  Result<int64_t> ChangeMark() const override;
  Result<int64_t> Prune(int64_t before) override;
  Status ClampEpochs(int64_t now) override { return ledger_->ClampEpochs(now); }
  EdgeState Edge(const std::string& from, const std::string& to) const override { return ledger_->Edge(from, to); }
  Result<std::vector<EdgeKey>> Tick(int64_t now) override { return ledger_->Tick(now); }
  Result<std::vector<EdgeKey>> EdgesWithFailures() const override { return ledger_->EdgesWithFailures(); }
  void Retain(const std::function<bool(const std::string& from, const std::string& to)>& keep) override { ledger_->Retain(keep); }
  std::vector<EdgeState> Edges() const override { return ledger_->Edges(); }
  int64_t reports() const override { return ledger_->reports(); }
  std::string Describe() const override { return path_; }

 private:
  SqliteReportStore(std::string path, std::unique_ptr<ReportLedger> ledger, std::unique_ptr<sqlite::Database> db);
  Status Save(const BrakeRecord& record, std::string_view action, int64_t at);  // under mu_
  // Decides and saves the brakes of `edges` not in force (under mu_).
  std::vector<BrakeRecord> DecideEdges(const std::vector<EdgeKey>& edges, const Decide& decide);

  std::string path_;
  std::unique_ptr<ReportLedger> ledger_;
  std::unique_ptr<sqlite::Database> db_;
  mutable std::mutex mu_;
  std::map<EdgeKey, BrakeState> states_;  // under mu_: every brake's state, as saved
  int64_t changes_ = 0;                   // under mu_
};

}  // namespace cincinnati::reports
