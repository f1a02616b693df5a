// The ledger's state for the sequential rule (report_ledger.h): attempts per edge in
// start order, durable in edge_attempts and cluster_outcomes, a settler per edge in
// memory.
#include <algorithm>

#include "reports/report_ledger.h"
#include "sqlite/database.h"

namespace cincinnati::reports {

using sqlite::Statement;

StartOrderOptions LedgerStartOrder() {
  StartOrderOptions options;
  options.horizon_secs = kStartHorizon;
  options.starts_announced = true;
  return options;
}

uint64_t AttemptKey(const std::string& cluster) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : cluster) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

Status ReportLedger::Track(const UpdateReport& r, int64_t received, std::vector<AttemptEvent>& events) {
  const EdgeKey key{r.from, r.to};
  // The same attempts count as for the Wilson rule: after the edge's restart, not
  // dated in the future.
  if (auto epoch = epochs_.find(key); epoch != epochs_.end() && (received <= epoch->second || r.started <= epoch->second)) {
    return Status::OK();
  }
  if (r.started > received + kMaxClockSkew) return Status::OK();
  const bool start = r.result == UpdateResult::kStarted;
  const bool failed = Counted(r);
  auto find = db_->Prepare("SELECT started, failed, known_bad FROM edge_attempts WHERE from_version = ?1 AND to_version = ?2 AND cluster = ?3");
  auto elsewhere = db_->Prepare("SELECT 1 FROM edge_attempts WHERE from_version = ?1 AND cluster = ?2 AND to_version <> ?3 LIMIT 1");
  auto last = db_->Prepare("SELECT failed FROM cluster_outcomes WHERE cluster = ?1 AND NOT (from_version = ?2 AND to_version = ?3)");
  auto outcome = db_->Prepare("INSERT OR REPLACE INTO cluster_outcomes(cluster, from_version, to_version, failed) VALUES(?1, ?2, ?3, ?4)");
  if (!find.ok() || !elsewhere.ok() || !last.ok() || !outcome.ok()) return db_->Failure("prepare");
  // The cluster's previous update, on another edge: failed, a known-bad site. Read
  // before this report's outcome replaces it.
  last->Bind(1, r.cluster_id).Bind(2, r.from).Bind(3, r.to);
  const Result<bool> had = last->Step();
  const bool known_bad = had.ok() && *had && last->Integer(0) != 0;
  last->Reset();
  if (!had.ok()) return db_->Failure("read a cluster's last outcome");
  // The cluster's last outcome, for the known-bad bit of its next attempt elsewhere.
  if (!start && !outcome->Bind(1, r.cluster_id).Bind(2, r.from).Bind(3, r.to).Bind(4, int64_t{failed}).Run().ok()) {
    return db_->Failure("save a cluster's outcome");
  }
  find->Bind(1, r.from).Bind(2, r.to).Bind(3, r.cluster_id);
  const Result<bool> found = find->Step();
  if (!found.ok()) return db_->Failure("read an attempt");
  const AttemptEvent known{key, AttemptKey(r.cluster_id), *found ? find->Integer(0) : 0, received, !start, failed,
                           *found && find->Integer(2) != 0};
  const bool open = *found && find->Integer(1) < 0;
  find->Reset();
  if (*found) {
    if (start || !open) return Status::OK();  // known already; its first end counts
    auto end = db_->Prepare("UPDATE edge_attempts SET failed = ?4, resolved = ?5 WHERE from_version = ?1 AND to_version = ?2 AND cluster = ?3");
    if (!end.ok() || !end->Bind(1, r.from).Bind(2, r.to).Bind(3, r.cluster_id).Bind(4, int64_t{failed}).Bind(5, received).Run().ok()) {
      return db_->Failure("end an attempt");
    }
    events.push_back(known);
    return Status::OK();
  }
  elsewhere->Bind(1, r.from).Bind(2, r.cluster_id).Bind(3, r.to);
  const Result<bool> other = elsewhere->Step();
  elsewhere->Reset();
  if (!other.ok()) return db_->Failure("read a cluster's other attempts");
  if (*other) return Status::OK();  // counted on another edge out of this version
  AttemptEvent added{key, AttemptKey(r.cluster_id), ClampedStart(r.started, received), received, !start, failed, known_bad};
  auto add = db_->Prepare(
      "INSERT INTO edge_attempts(from_version, to_version, cluster, started, announced, failed, resolved, known_bad) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  if (!add.ok()) return db_->Failure("prepare");
  add->Bind(1, r.from).Bind(2, r.to).Bind(3, r.cluster_id).Bind(4, added.started).Bind(5, start ? received : int64_t{0});
  add->Bind(6, start ? int64_t{-1} : int64_t{failed}).Bind(7, start ? int64_t{0} : received).Bind(8, int64_t{known_bad});
  if (!add->Run().ok()) return db_->Failure("add an attempt");
  events.push_back(added);
  return Status::OK();
}

std::unique_ptr<StartOrderSettler> ReplayAttempts(const std::vector<AttemptRow>& rows) {
  struct Event {
    int64_t at;
    bool resolve;
    const AttemptRow* row;
  };
  std::vector<Event> events;
  for (const AttemptRow& row : rows) {
    if (row.announced > 0) events.push_back({row.announced, false, &row});
    if (row.resolved > 0) events.push_back({row.resolved, true, &row});
  }
  // A start before its end at the same second.
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.at != b.at ? a.at < b.at : !a.resolve && b.resolve;
  });
  auto settler = std::make_unique<StartOrderSettler>(LedgerStartOrder());
  for (const Event& e : events) {
    const uint64_t key = AttemptKey(e.row->cluster);
    if (e.resolve) {
      settler->Resolve(key, e.row->started, e.row->failed > 0, e.row->known_bad, e.at);
    } else {
      settler->Start(key, e.row->started, e.row->known_bad, e.at);
    }
  }
  return settler;
}

Result<std::unique_ptr<StartOrderSettler>> ReportLedger::ReadSettler(const EdgeKey& key) const {
  CINCINNATI_ASSIGN_OR_RETURN(Statement rows, db_->Prepare("SELECT cluster, started, announced, failed, resolved, known_bad FROM "
                                                           "edge_attempts WHERE from_version = ?1 AND to_version = ?2"));
  rows.Bind(1, key.first).Bind(2, key.second);
  std::vector<AttemptRow> attempts;
  CINCINNATI_RETURN_IF_ERROR(rows.ForEachRow([&] {
    attempts.push_back({rows.Text(0), rows.Integer(1), rows.Integer(2), rows.Integer(3), rows.Integer(4), rows.Integer(5) != 0});
  }));
  return ReplayAttempts(attempts);
}

void ReportLedger::Apply(const std::vector<AttemptEvent>& events) {
  for (const AttemptEvent& e : events) {
    now_ = std::max(now_, e.at);
    auto settler = settlers_.find(e.edge);
    if (settler == settlers_.end()) continue;  // read from the file when next loaded
    if (e.resolve) {
      settler->second->Resolve(e.key, e.started, e.failed, e.known_bad, e.at);
    } else {
      settler->second->Start(e.key, e.started, e.known_bad, e.at);
    }
  }
}

void ReportLedger::Settled(EdgeState& edge) const {
  auto settler = settlers_.find({edge.from, edge.to});
  if (settler == settlers_.end()) return;
  edge.prefixes = settler->second->Settle(now_);
  edge.recent_attempts = settler->second->recent();
}

Result<std::vector<EdgeKey>> ReportLedger::Tick(int64_t now) {
  std::lock_guard lock(mu_);
  now_ = std::max(now_, now);
  // Edges with recent attempts that are not in memory yet (after a restart, no report
  // has loaded them): loaded, so that their stuck attempts are judged too.
  CINCINNATI_ASSIGN_OR_RETURN(Statement recent, db_->Prepare("SELECT DISTINCT from_version, to_version FROM edge_attempts "
                                                             "WHERE started > ?1"));
  recent.Bind(1, now_ - kStartHorizon);
  std::vector<EdgeKey> unloaded;
  CINCINNATI_RETURN_IF_ERROR(recent.ForEachRow([&] {
    EdgeKey key{recent.Text(0), recent.Text(1)};
    if (!settlers_.contains(key)) unloaded.push_back(std::move(key));
  }));
  for (const EdgeKey& key : unloaded) CINCINNATI_RETURN_IF_ERROR(Loaded(key).status());
  std::vector<EdgeKey> open;
  for (auto& [key, settler] : settlers_) {
    if (settler->recent() > 0) open.push_back(key);
  }
  return open;
}

Status ReportLedger::ClearAttempts(const EdgeKey& key) {
  auto clear = db_->Prepare("DELETE FROM edge_attempts WHERE from_version = ?1 AND to_version = ?2");
  if (!clear.ok() || !clear->Bind(1, key.first).Bind(2, key.second).Run().ok()) return db_->Failure("restart an edge's attempts");
  return Status::OK();
}

}  // namespace cincinnati::reports
