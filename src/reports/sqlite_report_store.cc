#include "reports/sqlite_report_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "sqlite/database.h"

namespace cincinnati::reports {
namespace {

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS brakes(from_version TEXT NOT NULL, to_version TEXT NOT NULL, state TEXT NOT NULL, "
    "since INTEGER NOT NULL, first_failure INTEGER NOT NULL, clusters INTEGER NOT NULL, failures INTEGER NOT NULL, "
    "lower_bound REAL NOT NULL, message TEXT NOT NULL, evidence TEXT NOT NULL, by TEXT NOT NULL, note TEXT NOT NULL, "
    "PRIMARY KEY(from_version, to_version))",
    "CREATE TABLE IF NOT EXISTS brake_events(at INTEGER NOT NULL, from_version TEXT NOT NULL, to_version TEXT NOT NULL, "
    "action TEXT NOT NULL, by TEXT NOT NULL, note TEXT NOT NULL)",
};

}  // namespace

std::string_view BrakeStateName(BrakeState state) {
  return state == BrakeState::kConfirmed ? "confirmed" : state == BrakeState::kCleared ? "cleared" : "active";
}

BrakeState BrakeStateOf(std::string_view name) {
  return name == "confirmed" ? BrakeState::kConfirmed : name == "cleared" ? BrakeState::kCleared : BrakeState::kActive;
}

SqliteReportStore::SqliteReportStore(std::string path, std::unique_ptr<ReportLedger> ledger, std::unique_ptr<sqlite::Database> db)
    : path_(std::move(path)), ledger_(std::move(ledger)), db_(std::move(db)) {}

SqliteReportStore::~SqliteReportStore() = default;

Result<std::unique_ptr<SqliteReportStore>> SqliteReportStore::Open(const std::string& path, ReportLedger::Options options) {
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<ReportLedger> ledger, ReportLedger::Open(path, std::move(options)));
  sqlite::Database::Options access;
  access.access = sqlite::Database::Options::Access::kReadWrite;  // the ledger made the file
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<sqlite::Database> db, sqlite::Database::Open(path, "brakes " + path, access));
  for (const char* sql : kSchema) {
    if (!db->Exec(sql).ok()) return db->Failure("schema");
  }
  std::unique_ptr<SqliteReportStore> store(new SqliteReportStore(path, std::move(ledger), std::move(db)));
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<BrakeRecord> brakes, store->Brakes());
  for (const BrakeRecord& b : brakes) store->states_[{b.from, b.to}] = b.state;
  return store;
}

Result<std::vector<BrakeRecord>> SqliteReportStore::Brakes() const {
  std::lock_guard lock(mu_);
  auto rows = db_->Prepare(
      "SELECT from_version, to_version, state, since, first_failure, clusters, failures, lower_bound, message, "
      "evidence, by, note FROM brakes ORDER BY from_version, to_version");
  if (!rows.ok()) return db_->Failure("read the brakes");
  std::vector<BrakeRecord> out;
  const Status read = rows->ForEachRow([&, &row = *rows] {
    out.push_back(BrakeRecord{row.Text(0), row.Text(1), BrakeStateOf(row.Text(2)), row.Integer(3), row.Integer(4),
                              {row.Integer(5), row.Integer(6)}, row.Real(7), row.Text(8), row.Text(9), row.Text(10), row.Text(11)});
  });
  if (!read.ok()) return db_->Failure("read the brakes");
  return out;
}

Status SqliteReportStore::Save(const BrakeRecord& r, std::string_view action, int64_t at) {
  if (!db_->Begin().ok()) return db_->Failure("begin");
  auto put = db_->Prepare(
      "INSERT OR REPLACE INTO brakes(from_version, to_version, state, since, first_failure, clusters, failures, "
      "lower_bound, message, evidence, by, note) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
  auto event = db_->Prepare("INSERT INTO brake_events(at, from_version, to_version, action, by, note) VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
  if (!put.ok() || !event.ok()) return db_->Failure("prepare");
  put->Bind(1, r.from).Bind(2, r.to).Bind(3, BrakeStateName(r.state)).Bind(4, r.since).Bind(5, r.first_failure);
  put->Bind(6, r.counts.clusters).Bind(7, r.counts.failures).BindReal(8, r.lower_bound).Bind(9, r.message).Bind(10, r.evidence);
  put->Bind(11, r.by).Bind(12, r.note);
  if (!put->Run().ok()) return db_->Failure("save a brake");
  event->Bind(1, at).Bind(2, r.from).Bind(3, r.to).Bind(4, action).Bind(5, r.by).Bind(6, r.note);
  if (!event->Run().ok()) return db_->Failure("record the action");
  if (!db_->Commit().ok()) return db_->Failure("commit");
  states_[{r.from, r.to}] = r.state;
  ++changes_;
  return Status::OK();
}

std::vector<BrakeRecord> SqliteReportStore::DecideEdges(const std::vector<EdgeKey>& edges, const Decide& decide) {
  std::vector<BrakeRecord> braked;
  for (const EdgeKey& key : edges) {
    if (auto known = states_.find(key); known != states_.end() && InForceState(known->second)) continue;
    std::optional<BrakeRecord> brake = decide(ledger_->Edge(key.first, key.second));
    if (!brake) continue;
    // Not saved, not braked: the edge is decided again with its next report.
    if (Status s = Save(*brake, "applied", brake->since); !s.ok()) {
      spdlog::error("brake {} -> {} not applied: {}", key.first, key.second, s.message());
      continue;
    }
    braked.push_back(std::move(*brake));
  }
  return braked;
}

Result<ReportStore::Recorded> SqliteReportStore::Record(const std::vector<UpdateReport>& batch, int64_t received,
                                                        const Decide& decide) {
  std::lock_guard lock(mu_);
  Recorded out;
  CINCINNATI_ASSIGN_OR_RETURN(out.outcomes, ledger_->Record(batch, received));
  std::set<EdgeKey> touched;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (out.outcomes[i] == ReportLedger::Outcome::kRecorded) touched.insert({batch[i].from, batch[i].to});
  }
  out.braked = DecideEdges({touched.begin(), touched.end()}, decide);
  return out;
}

Result<std::vector<BrakeRecord>> SqliteReportStore::Reconsider(const std::vector<EdgeKey>& edges, const Decide& decide) {
  std::lock_guard lock(mu_);
  return DecideEdges(edges, decide);
}

Result<BrakeRecord> SqliteReportStore::ChangeState(const EdgeKey& edge, BrakeState state, const std::string& by,
                                                   const std::string& note, std::string_view action, int64_t now) {
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<BrakeRecord> brakes, Brakes());
  std::lock_guard lock(mu_);
  auto known = std::find_if(brakes.begin(), brakes.end(), [&](const BrakeRecord& b) { return b.from == edge.first && b.to == edge.second; });
  if (known == brakes.end() || !InForceState(known->state)) {
    return Status::NotFound("no brake is in force on " + edge.first + " -> " + edge.second);
  }
  BrakeRecord record = *known;
  record.state = state;
  record.by = by;
  record.note = note;
  // The count restarts before the brake is lifted: a crash between the two leaves the
  // brake in force (the person clears again), never old evidence that would brake the
  // edge again at its next report.
  if (state == BrakeState::kCleared) CINCINNATI_RETURN_IF_ERROR(ledger_->RestartEdge(edge.first, edge.second, now));
  CINCINNATI_RETURN_IF_ERROR(Save(record, action, now));
  return record;
}

Result<int64_t> SqliteReportStore::ChangeMark() const {
  std::lock_guard lock(mu_);
  return changes_;
}

Result<int64_t> SqliteReportStore::Prune(int64_t before) {
  std::lock_guard lock(mu_);
  return ledger_->Prune(before);
}

}  // namespace cincinnati::reports
