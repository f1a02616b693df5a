#include "reports/report_ledger.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "sqlite/database.h"

namespace cincinnati::reports {
namespace {

using sqlite::Statement;

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS reports(cluster TEXT NOT NULL, attempt TEXT NOT NULL, from_version TEXT NOT NULL, "
    "to_version TEXT NOT NULL, arch TEXT NOT NULL, channel TEXT NOT NULL, result TEXT NOT NULL, component TEXT NOT NULL, "
    "reason TEXT NOT NULL, started INTEGER NOT NULL, ended INTEGER NOT NULL, received INTEGER NOT NULL, "
    "PRIMARY KEY(cluster, attempt))",
    "CREATE TABLE IF NOT EXISTS edge_clusters(from_version TEXT NOT NULL, to_version TEXT NOT NULL, cluster TEXT NOT NULL, "
    "failed INTEGER NOT NULL, component TEXT NOT NULL, first_failure INTEGER NOT NULL, "
    "PRIMARY KEY(from_version, to_version, cluster))",
    "CREATE INDEX IF NOT EXISTS reports_by_edge ON reports(from_version, to_version, received)",
    "CREATE INDEX IF NOT EXISTS edge_clusters_by_source ON edge_clusters(from_version, cluster)",
    "CREATE INDEX IF NOT EXISTS reports_by_received ON reports(received)",  // the hourly prune
    "CREATE TABLE IF NOT EXISTS edge_epochs(from_version TEXT NOT NULL, to_version TEXT NOT NULL, since INTEGER NOT NULL, "
    "PRIMARY KEY(from_version, to_version))",
    "CREATE TABLE IF NOT EXISTS attempt_starts(cluster TEXT NOT NULL, attempt TEXT NOT NULL, from_version TEXT NOT NULL, "
    "to_version TEXT NOT NULL, started INTEGER NOT NULL, received INTEGER NOT NULL, PRIMARY KEY(cluster, attempt))",
    "CREATE INDEX IF NOT EXISTS attempt_starts_by_edge ON attempt_starts(from_version, to_version, started)",
    "CREATE INDEX IF NOT EXISTS attempt_starts_by_received ON attempt_starts(received)",
    "CREATE TABLE IF NOT EXISTS edge_attempts(from_version TEXT NOT NULL, to_version TEXT NOT NULL, cluster TEXT NOT NULL, "
    "started INTEGER NOT NULL, announced INTEGER NOT NULL, failed INTEGER NOT NULL, resolved INTEGER NOT NULL, "
    "known_bad INTEGER NOT NULL, PRIMARY KEY(from_version, to_version, cluster))",
    "CREATE INDEX IF NOT EXISTS edge_attempts_by_source ON edge_attempts(from_version, cluster)",
    "CREATE INDEX IF NOT EXISTS edge_attempts_by_start ON edge_attempts(started)",  // the edges a Tick judges again
    "CREATE TABLE IF NOT EXISTS cluster_outcomes(cluster TEXT PRIMARY KEY, from_version TEXT NOT NULL, to_version TEXT NOT NULL, "
    "failed INTEGER NOT NULL)",
};

constexpr const char* kAddCluster =
    "INSERT INTO edge_clusters(from_version, to_version, cluster, failed, component, first_failure) VALUES(?1, ?2, ?3, ?4, ?5, ?6)";

void CountFailure(EdgeState& edge, const std::string& component, int64_t at) {
  ++edge.counts.failures;
  ++edge.failed_components[component];
  edge.first_failure = edge.first_failure == 0 ? at : std::min(edge.first_failure, at);
}

}  // namespace

int64_t ClampedStart(int64_t started, int64_t received) { return std::clamp(started, received - kStartHorizon, received); }

ReportLedger::ReportLedger(std::unique_ptr<sqlite::Database> db, Options options)
    : db_(std::move(db)), options_(std::move(options)) {}

ReportLedger::~ReportLedger() = default;

Result<std::unique_ptr<ReportLedger>> ReportLedger::Open(const std::string& path, Options options) {
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<sqlite::Database> db,
                              sqlite::Database::Open(path, "report ledger " + path, sqlite::Database::Options{}));
  std::unique_ptr<ReportLedger> ledger(new ReportLedger(std::move(db), std::move(options)));
  for (const char* sql : kSchema) CINCINNATI_RETURN_IF_ERROR(ledger->db_->Exec(sql));
  CINCINNATI_RETURN_IF_ERROR(ledger->Load());
  return ledger;
}

Status ReportLedger::Load() {
  CINCINNATI_ASSIGN_OR_RETURN(Statement count,
                              db_->Prepare("SELECT (SELECT count(*) FROM reports) + (SELECT count(*) FROM attempt_starts)"));
  CINCINNATI_ASSIGN_OR_RETURN(Statement epochs, db_->Prepare("SELECT from_version, to_version, since FROM edge_epochs"));
  std::lock_guard lock(mu_);
  CINCINNATI_RETURN_IF_ERROR(count.ForEachRow([&] { reports_ = count.Integer(0); }));
  return epochs.ForEachRow([&] { epochs_[{epochs.Text(0), epochs.Text(1)}] = epochs.Integer(2); });
}

Result<EdgeState*> ReportLedger::Loaded(const EdgeKey& key) const {
  if (auto at = edges_.find(key); at != edges_.end()) return &at->second;
  CINCINNATI_ASSIGN_OR_RETURN(EdgeState edge, Read(key));
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<StartOrderSettler> settler, ReadSettler(key));
  settlers_.insert_or_assign(key, std::move(settler));
  return &edges_.emplace(key, std::move(edge)).first->second;
}

Result<EdgeState> ReportLedger::Read(const EdgeKey& key) const {
  CINCINNATI_ASSIGN_OR_RETURN(
      Statement rows, db_->Prepare("SELECT failed, component, first_failure FROM edge_clusters WHERE from_version = ?1 AND to_version = ?2"));
  rows.Bind(1, key.first).Bind(2, key.second);
  EdgeState edge{key.first, key.second, {}, 0, {}};
  CINCINNATI_RETURN_IF_ERROR(rows.ForEachRow([&] {
    ++edge.counts.clusters;
    if (rows.Integer(0) != 0) CountFailure(edge, rows.Text(1), rows.Integer(2));
  }));
  return edge;
}

bool ReportLedger::Counted(const UpdateReport& r) const {
  return r.result == UpdateResult::kFailed &&
         std::find(options_.counted_reasons.begin(), options_.counted_reasons.end(), r.reason) != options_.counted_reasons.end();
}

struct ReportLedger::CountStatements {
  static Result<CountStatements> Prepare(const sqlite::Database& db) {
    CINCINNATI_ASSIGN_OR_RETURN(Statement find,
                                db.Prepare("SELECT failed FROM edge_clusters WHERE from_version = ?1 AND to_version = ?2 AND cluster = ?3"));
    CINCINNATI_ASSIGN_OR_RETURN(
        Statement elsewhere,
        db.Prepare("SELECT 1 FROM edge_clusters WHERE from_version = ?1 AND cluster = ?2 AND to_version <> ?3 LIMIT 1"));
    CINCINNATI_ASSIGN_OR_RETURN(Statement add, db.Prepare(kAddCluster));
    CINCINNATI_ASSIGN_OR_RETURN(Statement fail, db.Prepare("UPDATE edge_clusters SET failed = 1, component = ?4, first_failure = ?5 "
                                                           "WHERE from_version = ?1 AND to_version = ?2 AND cluster = ?3"));
    return CountStatements{std::move(find), std::move(elsewhere), std::move(add), std::move(fail)};
  }
  Statement find, elsewhere, add, fail;
};

Result<std::vector<ReportLedger::Outcome>> ReportLedger::Record(const std::vector<UpdateReport>& batch, int64_t received) {
  for (const UpdateReport& r : batch) CINCINNATI_RETURN_IF_ERROR(ValidateUpdateReport(r));
  std::lock_guard lock(mu_);
  // Each edge's counts in memory first (read outside the write transaction).
  for (const UpdateReport& r : batch) CINCINNATI_RETURN_IF_ERROR(Loaded({r.from, r.to}).status());
  if (!db_->Begin().ok()) return db_->Failure("begin");
  auto insert = db_->Prepare(
      "INSERT OR IGNORE INTO reports(cluster, attempt, from_version, to_version, arch, channel, result, component, "
      "reason, started, ended, received) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
  auto sql = CountStatements::Prepare(*db_);
  if (!insert.ok() || !sql.ok()) return db_->Failure("prepare");
  // Applied to the in-memory counts only once the transaction has committed.
  std::map<EdgeKey, EdgeState> changed;
  std::vector<AttemptEvent> events;
  std::vector<Outcome> outcomes;
  int64_t recorded = 0;
  for (const UpdateReport& r : batch) {
    if (r.result == UpdateResult::kStarted) {
      CINCINNATI_ASSIGN_OR_RETURN(bool inserted, RecordStart(r, received));
      outcomes.push_back(inserted ? Outcome::kRecorded : Outcome::kDuplicate);
      recorded += inserted;
      if (inserted) CINCINNATI_RETURN_IF_ERROR(Track(r, received, events));
      continue;
    }
    insert->Reset();
    insert->Bind(1, r.cluster_id).Bind(2, r.attempt).Bind(3, r.from).Bind(4, r.to).Bind(5, r.arch).Bind(6, r.channel);
    insert->Bind(7, UpdateResultName(r.result)).Bind(8, r.component).Bind(9, r.reason);
    insert->Bind(10, r.started).Bind(11, r.ended).Bind(12, received);
    if (!insert->Run().ok()) return db_->Failure("insert a report");
    if (db_->changes() == 0) {
      outcomes.push_back(Outcome::kDuplicate);
      continue;
    }
    outcomes.push_back(Outcome::kRecorded);
    ++recorded;
    const EdgeKey key{r.from, r.to};
    auto at = changed.find(key);
    if (at == changed.end()) at = changed.emplace(key, edges_.at(key)).first;
    CINCINNATI_RETURN_IF_ERROR(Count(r, received, at->second, *sql));
    CINCINNATI_RETURN_IF_ERROR(Track(r, received, events));
  }
  if (!db_->Commit().ok()) return db_->Failure("commit");
  for (auto& [key, edge] : changed) edges_[key] = std::move(edge);
  now_ = std::max(now_, received);
  Apply(events);
  reports_ += recorded;
  return outcomes;
}

Result<bool> ReportLedger::RecordStart(const UpdateReport& r, int64_t received) {
  auto ended = db_->Prepare("SELECT 1 FROM reports WHERE cluster = ?1 AND attempt = ?2");
  auto insert = db_->Prepare(
      "INSERT OR IGNORE INTO attempt_starts(cluster, attempt, from_version, to_version, started, received) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
  if (!ended.ok() || !insert.ok()) return db_->Failure("prepare");
  ended->Bind(1, r.cluster_id).Bind(2, r.attempt);
  const Result<bool> final_known = ended->Step();
  ended->Reset();
  if (!final_known.ok()) return db_->Failure("read an attempt's report");
  if (*final_known) return false;  // its final report came first: nothing to add
  insert->Bind(1, r.cluster_id).Bind(2, r.attempt).Bind(3, r.from).Bind(4, r.to);
  insert->Bind(5, ClampedStart(r.started, received)).Bind(6, received);
  if (!insert->Run().ok()) return db_->Failure("insert a start");
  return db_->changes() > 0;
}

Result<std::vector<AttemptStart>> ReportLedger::Starts(const std::string& from, const std::string& to) const {
  std::lock_guard lock(mu_);
  CINCINNATI_ASSIGN_OR_RETURN(Statement rows, db_->Prepare("SELECT cluster, attempt, started, received FROM attempt_starts "
                                                           "WHERE from_version = ?1 AND to_version = ?2 ORDER BY started, cluster"));
  rows.Bind(1, from).Bind(2, to);
  std::vector<AttemptStart> out;
  CINCINNATI_RETURN_IF_ERROR(rows.ForEachRow([&] { out.push_back({rows.Text(0), rows.Text(1), rows.Integer(2), rows.Integer(3)}); }));
  return out;
}

Status ReportLedger::Count(const UpdateReport& r, int64_t received, EdgeState& edge, CountStatements& sql) {
  // Counted only when received after the edge's restart, for an attempt that started
  // after it (strictly: a report of the clear's own second may be from before it), and
  // not dated in the future (the times are the client's).
  const EdgeKey key{r.from, r.to};
  if (auto epoch = epochs_.find(key); epoch != epochs_.end() && (received <= epoch->second || r.started <= epoch->second)) {
    return Status::OK();
  }
  if (r.started > received + kMaxClockSkew) return Status::OK();
  const bool counted = Counted(r);
  sql.find.Reset();
  sql.find.Bind(1, r.from).Bind(2, r.to).Bind(3, r.cluster_id);
  const Result<bool> found = sql.find.Step();
  const bool was_failed = found.ok() && *found && sql.find.Integer(0) != 0;
  sql.find.Reset();  // no read left open under the writes below
  if (!found.ok()) return db_->Failure("read a cluster's count");
  if (*found) {
    if (was_failed || !counted) return Status::OK();
    sql.fail.Reset();
    sql.fail.Bind(1, r.from).Bind(2, r.to).Bind(3, r.cluster_id).Bind(4, r.component).Bind(5, received);
    if (!sql.fail.Run().ok()) return db_->Failure("count a failure");
    CountFailure(edge, r.component, received);
    return Status::OK();
  }
  // A cluster already counted on another edge out of this version is not counted here.
  sql.elsewhere.Reset();
  sql.elsewhere.Bind(1, r.from).Bind(2, r.cluster_id).Bind(3, r.to);
  const Result<bool> other = sql.elsewhere.Step();
  sql.elsewhere.Reset();
  if (!other.ok()) return db_->Failure("read a cluster's other edges");
  if (*other) return Status::OK();
  sql.add.Reset();
  sql.add.Bind(1, r.from).Bind(2, r.to).Bind(3, r.cluster_id).Bind(4, int64_t{counted ? 1 : 0});
  sql.add.Bind(5, counted ? r.component : std::string()).Bind(6, counted ? received : int64_t{0});
  if (!sql.add.Run().ok()) return db_->Failure("count a cluster");
  ++edge.counts.clusters;
  if (counted) CountFailure(edge, r.component, received);
  return Status::OK();
}

Status ReportLedger::ClampEpochs(int64_t now) {
  std::lock_guard lock(mu_);
  for (auto& [key, since] : epochs_) {
    if (since <= now + kMaxClockSkew) continue;
    // A clear made while the clock was ahead: no report would count until that date.
    auto clamp = db_->Prepare("UPDATE edge_epochs SET since = ?3 WHERE from_version = ?1 AND to_version = ?2");
    if (!clamp.ok() || !clamp->Bind(1, key.first).Bind(2, key.second).Bind(3, now).Run().ok()) {
      return db_->Failure("move a restart back to now");
    }
    spdlog::warn("brakes: the count of {} -> {} restarted at {}, ahead of this clock (it was ahead when a brake was cleared): "
                 "it counts from now on",
                 key.first, key.second, since);
    since = now;
  }
  return Status::OK();
}

Status ReportLedger::RestartEdge(const std::string& from, const std::string& to, int64_t since) {
  std::lock_guard lock(mu_);
  if (!db_->Begin().ok()) return db_->Failure("begin");
  auto epoch = db_->Prepare("INSERT OR REPLACE INTO edge_epochs(from_version, to_version, since) VALUES(?1, ?2, ?3)");
  auto clear = db_->Prepare("DELETE FROM edge_clusters WHERE from_version = ?1 AND to_version = ?2");
  auto since_then = db_->Prepare(
      "SELECT cluster, result, reason, component, received FROM reports WHERE from_version = ?1 AND to_version = ?2 "
      "AND received > ?3 AND started > ?3 AND started <= received + ?4 AND NOT EXISTS (SELECT 1 FROM "
      "edge_clusters e WHERE e.from_version = ?1 AND e.cluster = reports.cluster AND e.to_version <> ?2) "
      "ORDER BY received");
  auto add = db_->Prepare(kAddCluster);
  if (!epoch.ok() || !clear.ok() || !since_then.ok() || !add.ok()) return db_->Failure("prepare");
  if (!epoch->Bind(1, from).Bind(2, to).Bind(3, since).Run().ok()) return db_->Failure("restart an edge");
  // The sequential rule's attempts start afresh too: every one known started before it.
  CINCINNATI_RETURN_IF_ERROR(ClearAttempts({from, to}));
  if (!clear->Bind(1, from).Bind(2, to).Run().ok()) return db_->Failure("restart an edge");
  // Per cluster since then: failed if any attempt's failure counts, with the first one's component and time.
  struct Seen {
    bool failed = false;
    std::string component;
    int64_t at = 0;
  };
  std::map<std::string, Seen> clusters;
  Statement& rows = *since_then;
  rows.Bind(1, from).Bind(2, to).Bind(3, since).Bind(4, kMaxClockSkew);
  const Status read = rows.ForEachRow([&] {
    UpdateReport r;
    r.result = rows.Text(1) == "Failed" ? UpdateResult::kFailed : UpdateResult::kCompleted;
    r.reason = rows.Text(2);
    Seen& seen = clusters[rows.Text(0)];
    if (!seen.failed && Counted(r)) seen = {true, rows.Text(3), rows.Integer(4)};
  });
  if (!read.ok()) return db_->Failure("read the edge's reports");
  EdgeState edge{from, to, {}, 0, {}};
  for (const auto& [cluster, seen] : clusters) {
    add->Reset();
    add->Bind(1, from).Bind(2, to).Bind(3, cluster).Bind(4, int64_t{seen.failed ? 1 : 0}).Bind(5, seen.component).Bind(6, seen.at);
    if (!add->Run().ok()) return db_->Failure("count a cluster");
    ++edge.counts.clusters;
    if (seen.failed) CountFailure(edge, seen.component, seen.at);
  }
  if (!db_->Commit().ok()) return db_->Failure("commit");
  epochs_[{from, to}] = since;
  edges_[{from, to}] = std::move(edge);
  settlers_.insert_or_assign(EdgeKey{from, to}, std::make_unique<StartOrderSettler>(LedgerStartOrder()));
  return Status::OK();
}

EdgeState ReportLedger::Edge(const std::string& from, const std::string& to) const {
  std::lock_guard lock(mu_);
  if (auto at = edges_.find({from, to}); at != edges_.end()) {
    EdgeState edge = at->second;
    Settled(edge);
    return edge;
  }
  // Kept in memory only when the file has counts or attempts for it: asking about edges
  // nobody reported on costs no memory.
  auto edge = Read({from, to});
  auto settler = edge.ok() ? ReadSettler({from, to}) : Result<std::unique_ptr<StartOrderSettler>>(edge.status());
  if (!settler.ok()) {
    spdlog::error("{}", settler.status().message());
    return EdgeState{from, to, {}, 0, {}};
  }
  if (edge->counts.clusters > 0 || !(*settler)->empty()) {
    edges_.emplace(EdgeKey{from, to}, *edge);
    settlers_.insert_or_assign(EdgeKey{from, to}, std::move(settler).value());
    Settled(*edge);
  }
  return std::move(edge).value();
}

std::vector<EdgeState> ReportLedger::Edges() const {
  std::lock_guard lock(mu_);
  std::vector<EdgeState> out;
  out.reserve(edges_.size());
  for (const auto& [key, edge] : edges_) {
    out.push_back(edge);
    Settled(out.back());
  }
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> ReportLedger::EdgesWithFailures() const {
  std::lock_guard lock(mu_);
  CINCINNATI_ASSIGN_OR_RETURN(Statement rows, db_->Prepare("SELECT DISTINCT from_version, to_version FROM edge_clusters WHERE failed <> 0"));
  std::vector<std::pair<std::string, std::string>> out;
  CINCINNATI_RETURN_IF_ERROR(rows.ForEachRow([&] { out.emplace_back(rows.Text(0), rows.Text(1)); }));
  return out;
}

void ReportLedger::Retain(const std::function<bool(const std::string& from, const std::string& to)>& keep) {
  std::lock_guard lock(mu_);
  std::erase_if(edges_, [&](const auto& entry) { return !keep(entry.first.first, entry.first.second); });
  std::erase_if(settlers_, [&](const auto& entry) { return !edges_.contains(entry.first); });
}

Result<int64_t> ReportLedger::Prune(int64_t before) {
  std::lock_guard lock(mu_);
  auto prune = db_->Prepare("DELETE FROM reports WHERE received < ?1");
  if (!prune.ok() || !prune->Bind(1, before).Run().ok()) return db_->Failure("prune old reports");
  int64_t gone = db_->changes();
  auto starts = db_->Prepare("DELETE FROM attempt_starts WHERE received < ?1");
  if (!starts.ok() || !starts->Bind(1, before).Run().ok()) return db_->Failure("prune old starts");
  gone += db_->changes();
  reports_ -= gone;
  return gone;
}

int64_t ReportLedger::reports() const {
  std::lock_guard lock(mu_);
  return reports_;
}

}  // namespace cincinnati::reports
