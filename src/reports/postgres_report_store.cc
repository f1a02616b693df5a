#include "reports/postgres_report_store.h"

#include "reports/postgres_attempts.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <set>

namespace cincinnati::reports {
namespace {

using postgres::PgResult;
using postgres::PostgresTransaction;

// Serializes replicas creating the tables at the same moment ("CinRepS1").
constexpr int64_t kSchemaLockKey = 0x43696e5265705331;

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS reports(cluster TEXT NOT NULL, attempt TEXT NOT NULL, from_version TEXT NOT NULL, "
    "to_version TEXT NOT NULL, arch TEXT NOT NULL, channel TEXT NOT NULL, result TEXT NOT NULL, component TEXT NOT NULL, "
    "reason TEXT NOT NULL, started BIGINT NOT NULL, ended BIGINT NOT NULL, received BIGINT NOT NULL, "
    "PRIMARY KEY(cluster, attempt))",
    "CREATE INDEX IF NOT EXISTS reports_by_edge ON reports(from_version, to_version, received)",
    "CREATE INDEX IF NOT EXISTS reports_by_received ON reports(received)",
    "CREATE TABLE IF NOT EXISTS edge_clusters(from_version TEXT NOT NULL, to_version TEXT NOT NULL, cluster TEXT NOT NULL, "
    "failed INTEGER NOT NULL, component TEXT NOT NULL, first_failure BIGINT NOT NULL, "
    "PRIMARY KEY(from_version, to_version, cluster))",
    "CREATE INDEX IF NOT EXISTS edge_clusters_by_source ON edge_clusters(from_version, cluster)",
    // Per-edge totals of edge_clusters, kept with it: a decision reads one row per edge
    // and its components, not every cluster that reported on it.
    "CREATE TABLE IF NOT EXISTS edge_counts(from_version TEXT NOT NULL, to_version TEXT NOT NULL, clusters BIGINT NOT NULL, "
    "failures BIGINT NOT NULL, first_failure BIGINT NOT NULL, PRIMARY KEY(from_version, to_version))",
    "CREATE TABLE IF NOT EXISTS edge_components(from_version TEXT NOT NULL, to_version TEXT NOT NULL, component TEXT NOT NULL, "
    "failures BIGINT NOT NULL, PRIMARY KEY(from_version, to_version, component))",
    "CREATE TABLE IF NOT EXISTS edge_epochs(from_version TEXT NOT NULL, to_version TEXT NOT NULL, since BIGINT NOT NULL, "
    "PRIMARY KEY(from_version, to_version))",
    "CREATE TABLE IF NOT EXISTS brakes(from_version TEXT NOT NULL, to_version TEXT NOT NULL, state TEXT NOT NULL, "
    "since BIGINT NOT NULL, first_failure BIGINT NOT NULL, clusters BIGINT NOT NULL, failures BIGINT NOT NULL, "
    "lower_bound DOUBLE PRECISION NOT NULL, message TEXT NOT NULL, evidence TEXT NOT NULL, \"by\" TEXT NOT NULL, "
    "note TEXT NOT NULL, PRIMARY KEY(from_version, to_version))",
    // Moves by one in every transaction that changes a brake, under its row's lock: so
    // its values follow the commits' order (a serial id would not: ids are taken at
    // insert, and a transaction with a lower one can commit later, unseen by a reader
    // that already took the higher).
    "CREATE TABLE IF NOT EXISTS brake_mark(id INTEGER PRIMARY KEY, n BIGINT NOT NULL)",
    "INSERT INTO brake_mark VALUES(1, 0) ON CONFLICT (id) DO NOTHING",
    "CREATE TABLE IF NOT EXISTS brake_events(id BIGSERIAL PRIMARY KEY, at BIGINT NOT NULL, from_version TEXT NOT NULL, "
    "to_version TEXT NOT NULL, action TEXT NOT NULL, \"by\" TEXT NOT NULL, note TEXT NOT NULL)",
    // Started reports; the sequential rule's attempts per edge (report_ledger.h).
    "CREATE TABLE IF NOT EXISTS attempt_starts(cluster TEXT NOT NULL, attempt TEXT NOT NULL, from_version TEXT NOT NULL, "
    "to_version TEXT NOT NULL, started BIGINT NOT NULL, received BIGINT NOT NULL, PRIMARY KEY(cluster, attempt))",
    "CREATE INDEX IF NOT EXISTS attempt_starts_by_edge ON attempt_starts(from_version, to_version, started)",
    "CREATE INDEX IF NOT EXISTS attempt_starts_by_received ON attempt_starts(received)",
    "CREATE TABLE IF NOT EXISTS edge_attempts(from_version TEXT NOT NULL, to_version TEXT NOT NULL, cluster TEXT NOT NULL, "
    "started BIGINT NOT NULL, announced BIGINT NOT NULL, failed INTEGER NOT NULL, resolved BIGINT NOT NULL, "
    "known_bad INTEGER NOT NULL, PRIMARY KEY(from_version, to_version, cluster))",
    "CREATE INDEX IF NOT EXISTS edge_attempts_by_source ON edge_attempts(from_version, cluster)",
    "CREATE INDEX IF NOT EXISTS edge_attempts_by_start ON edge_attempts(started)",  // the edges a Tick judges again
    // The sequential rule's settled attempts of an edge as counts (postgres_attempts.h): a
    // decision reads only the attempts not settled yet.
    "ALTER TABLE edge_attempts ADD COLUMN IF NOT EXISTS settled INTEGER NOT NULL DEFAULT 0",
    "CREATE INDEX IF NOT EXISTS edge_attempts_unsettled ON edge_attempts(from_version, to_version) WHERE settled = 0",
    "CREATE TABLE IF NOT EXISTS edge_settled(from_version TEXT NOT NULL, to_version TEXT NOT NULL, clusters BIGINT NOT NULL, "
    "failures BIGINT NOT NULL, excluded BIGINT NOT NULL, excluded_failures BIGINT NOT NULL, through BIGINT NOT NULL, "
    "PRIMARY KEY(from_version, to_version))",
    "CREATE TABLE IF NOT EXISTS cluster_outcomes(cluster TEXT PRIMARY KEY, from_version TEXT NOT NULL, to_version TEXT NOT NULL, "
    "failed INTEGER NOT NULL)",
};

constexpr const char* kAddCluster =
    "INSERT INTO edge_clusters(from_version, to_version, cluster, failed, component, first_failure) "
    "VALUES($1, $2, $3, $4, $5, $6)";

int64_t Int(const std::string& text) {
  int64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

std::string Text(int64_t v) { return std::to_string(v); }

// The same 64 bits in every replica (FNV-1a): the key of an advisory lock.
int64_t LockKey(std::string_view kind, std::string_view a, std::string_view b) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&](std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
    h = (h ^ 0xff) * 0x100000001b3ULL;  // a separator no text byte sequence makes ambiguous
  };
  mix(kind);
  mix(a);
  mix(b);
  return static_cast<int64_t>(h);
}

void CountFailure(EdgeState& edge, const std::string& component, int64_t at) {
  ++edge.counts.failures;
  ++edge.failed_components[component];
  edge.first_failure = edge.first_failure == 0 ? at : std::min(edge.first_failure, at);
}

BrakeRecord BrakeOfRow(const std::vector<std::string>& row) {
  return BrakeRecord{row[0], row[1], BrakeStateOf(row[2]), Int(row[3]), Int(row[4]), {Int(row[5]), Int(row[6])},
                     std::strtod(row[7].c_str(), nullptr), row[8], row[9], row[10], row[11]};
}

}  // namespace

// The statements of one transaction, on the store's options.
class PostgresReportStore::Batch {
 public:
  Batch(PostgresTransaction& tx, const ReportLedger::Options& options) : tx_(tx), options_(options) {}

  // Advisory locks in one order (sorted keys): no two transactions wait in a circle.
  Status Lock(std::set<int64_t> keys) {
    for (int64_t key : keys) CINCINNATI_RETURN_IF_ERROR(tx_.Exec("SELECT pg_advisory_xact_lock($1)", {Text(key)}).status());
    return Status::OK();
  }

  // Inserts the report; false when it was there already (a resend), or, for a Started
  // one, when its attempt's final report was.
  Result<bool> Insert(const UpdateReport& r, int64_t received) {
    if (r.result == UpdateResult::kStarted) {
      CINCINNATI_ASSIGN_OR_RETURN(PgResult ended, tx_.Exec("SELECT 1 FROM reports WHERE cluster = $1 AND attempt = $2",
                                                           {r.cluster_id, r.attempt}));
      if (!ended.rows.empty()) return false;
      CINCINNATI_ASSIGN_OR_RETURN(
          PgResult put, tx_.Exec("INSERT INTO attempt_starts(cluster, attempt, from_version, to_version, started, received) "
                                 "VALUES($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
                                 {r.cluster_id, r.attempt, r.from, r.to, Text(ClampedStart(r.started, received)), Text(received)}));
      return put.affected > 0;
    }
    CINCINNATI_ASSIGN_OR_RETURN(
        PgResult put,
        tx_.Exec("INSERT INTO reports(cluster, attempt, from_version, to_version, arch, channel, result, component, reason, "
                 "started, ended, received) VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING",
                 {r.cluster_id, r.attempt, r.from, r.to, r.arch, r.channel, std::string(UpdateResultName(r.result)), r.component,
                  r.reason, Text(r.started), Text(r.ended), Text(received)}));
    return put.affected > 0;
  }

  bool Counted(const UpdateReport& r) const {
    const auto& reasons = options_.counted_reasons;
    return r.result == UpdateResult::kFailed && std::find(reasons.begin(), reasons.end(), r.reason) != reasons.end();
  }

  // As ReportLedger counts a recorded report against its edge; the edge's totals move
  // in `totals_`, written by Flush.
  Status Count(const UpdateReport& r, int64_t received) {
    CINCINNATI_ASSIGN_OR_RETURN(PgResult epoch, tx_.Exec("SELECT since FROM edge_epochs WHERE from_version = $1 AND to_version = $2",
                                                         {r.from, r.to}));
    if (!epoch.rows.empty()) {
      const int64_t since = Int(epoch.rows[0][0]);
      if (received <= since || r.started <= since) return Status::OK();
    }
    if (r.started > received + kMaxClockSkew) return Status::OK();
    const bool counted = Counted(r);
    EdgeState& delta = Delta({r.from, r.to});
    CINCINNATI_ASSIGN_OR_RETURN(PgResult found, tx_.Exec("SELECT failed FROM edge_clusters WHERE from_version = $1 AND "
                                                         "to_version = $2 AND cluster = $3",
                                                         {r.from, r.to, r.cluster_id}));
    if (!found.rows.empty()) {
      if (Int(found.rows[0][0]) != 0 || !counted) return Status::OK();
      CountFailure(delta, r.component, received);
      return tx_.Exec("UPDATE edge_clusters SET failed = 1, component = $4, first_failure = $5 WHERE from_version = $1 AND "
                      "to_version = $2 AND cluster = $3",
                      {r.from, r.to, r.cluster_id, r.component, Text(received)})
          .status();
    }
    // A cluster already counted on another edge out of this version is not counted here.
    CINCINNATI_ASSIGN_OR_RETURN(PgResult other, tx_.Exec("SELECT 1 FROM edge_clusters WHERE from_version = $1 AND cluster = $2 "
                                                         "AND to_version <> $3 LIMIT 1",
                                                         {r.from, r.cluster_id, r.to}));
    if (!other.rows.empty()) return Status::OK();
    ++delta.counts.clusters;
    if (counted) CountFailure(delta, r.component, received);
    return tx_.Exec(kAddCluster, {r.from, r.to, r.cluster_id, counted ? "1" : "0", counted ? r.component : "",
                                  Text(counted ? received : 0)})
        .status();
  }

  // The report's attempt in start order; the edge's attempts settled (postgres_attempts.h).
  Status Track(const UpdateReport& r, int64_t received) { return TrackAttempt(tx_, r, received, Counted(r)); }
  Status Settle(EdgeState& edge, int64_t now) { return SettleAttempts(tx_, edge, now); }

  // Adds what Count and Restart counted to the edges' totals.
  Status Flush() {
    for (const auto& [key, delta] : totals_) {
      CINCINNATI_RETURN_IF_ERROR(
          tx_.Exec("INSERT INTO edge_counts(from_version, to_version, clusters, failures, first_failure) VALUES($1, $2, $3, $4, $5) "
                   "ON CONFLICT (from_version, to_version) DO UPDATE SET clusters = edge_counts.clusters + EXCLUDED.clusters, "
                   "failures = edge_counts.failures + EXCLUDED.failures, first_failure = CASE WHEN EXCLUDED.first_failure = 0 "
                   "THEN edge_counts.first_failure WHEN edge_counts.first_failure = 0 THEN EXCLUDED.first_failure ELSE "
                   "least(edge_counts.first_failure, EXCLUDED.first_failure) END",
                   {key.first, key.second, Text(delta.counts.clusters), Text(delta.counts.failures), Text(delta.first_failure)})
              .status());
      for (const auto& [component, failures] : delta.failed_components) {
        CINCINNATI_RETURN_IF_ERROR(
            tx_.Exec("INSERT INTO edge_components(from_version, to_version, component, failures) VALUES($1, $2, $3, $4) "
                     "ON CONFLICT (from_version, to_version, component) DO UPDATE SET failures = edge_components.failures + "
                     "EXCLUDED.failures",
                     {key.first, key.second, component, Text(failures)})
                .status());
      }
    }
    totals_.clear();
    return Status::OK();
  }

  Result<EdgeState> Edge(const EdgeKey& key, int64_t now) {
    EdgeState edge{key.first, key.second, {}, 0, {}};
    CINCINNATI_RETURN_IF_ERROR(Settle(edge, now));
    CINCINNATI_ASSIGN_OR_RETURN(PgResult totals, tx_.Exec("SELECT clusters, failures, first_failure FROM edge_counts "
                                                          "WHERE from_version = $1 AND to_version = $2",
                                                          {key.first, key.second}));
    if (totals.rows.empty()) return edge;
    edge.counts = {Int(totals.rows[0][0]), Int(totals.rows[0][1])};
    edge.first_failure = Int(totals.rows[0][2]);
    CINCINNATI_ASSIGN_OR_RETURN(PgResult components, tx_.Exec("SELECT component, failures FROM edge_components WHERE "
                                                              "from_version = $1 AND to_version = $2 AND failures > 0",
                                                              {key.first, key.second}));
    for (const auto& row : components.rows) edge.failed_components[row[0]] = Int(row[1]);
    return edge;
  }

  // Decides the edge's brake unless one is in force (its row locked until the commit).
  Result<std::optional<BrakeRecord>> DecideEdge(const EdgeKey& key, const Decide& decide, int64_t now) {
    CINCINNATI_ASSIGN_OR_RETURN(PgResult state, tx_.Exec("SELECT state FROM brakes WHERE from_version = $1 AND to_version = $2 "
                                                         "FOR UPDATE",
                                                         {key.first, key.second}));
    if (!state.rows.empty() && InForceState(BrakeStateOf(state.rows[0][0]))) return std::optional<BrakeRecord>();
    CINCINNATI_ASSIGN_OR_RETURN(EdgeState edge, Edge(key, now));
    std::optional<BrakeRecord> brake = decide(edge);
    if (brake) CINCINNATI_RETURN_IF_ERROR(Save(*brake, "applied", brake->since));
    return brake;
  }

  Status Save(const BrakeRecord& r, std::string_view action, int64_t at) {
    CINCINNATI_RETURN_IF_ERROR(
        tx_.Exec("INSERT INTO brakes(from_version, to_version, state, since, first_failure, clusters, failures, lower_bound, "
                 "message, evidence, \"by\", note) VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) "
                 "ON CONFLICT (from_version, to_version) DO UPDATE SET state = EXCLUDED.state, since = EXCLUDED.since, "
                 "first_failure = EXCLUDED.first_failure, clusters = EXCLUDED.clusters, failures = EXCLUDED.failures, "
                 "lower_bound = EXCLUDED.lower_bound, message = EXCLUDED.message, evidence = EXCLUDED.evidence, "
                 "\"by\" = EXCLUDED.\"by\", note = EXCLUDED.note",
                 {r.from, r.to, std::string(BrakeStateName(r.state)), Text(r.since), Text(r.first_failure), Text(r.counts.clusters),
                  Text(r.counts.failures), fmt::format("{:.17g}", r.lower_bound), r.message, r.evidence, r.by, r.note})
            .status());
    return Logged(r, action, at);
  }

  // The audit trail's entry of a change to a brake, and the change mark moved.
  Status Logged(const BrakeRecord& r, std::string_view action, int64_t at) {
    CINCINNATI_RETURN_IF_ERROR(
        tx_.Exec("INSERT INTO brake_events(at, from_version, to_version, action, \"by\", note) VALUES($1, $2, $3, $4, $5, $6)",
                 {Text(at), r.from, r.to, std::string(action), r.by, r.note})
            .status());
    return tx_.Exec("UPDATE brake_mark SET n = n + 1 WHERE id = 1").status();
  }

  // Counts the edge again from the reports received, of attempts started, after `since`.
  Status Restart(const EdgeKey& key, int64_t since) {
    CINCINNATI_RETURN_IF_ERROR(tx_.Exec("INSERT INTO edge_epochs(from_version, to_version, since) VALUES($1, $2, $3) "
                                        "ON CONFLICT (from_version, to_version) DO UPDATE SET since = EXCLUDED.since",
                                        {key.first, key.second, Text(since)})
                                   .status());
    for (const char* table : {"edge_clusters", "edge_counts", "edge_components", "edge_attempts", "edge_settled"}) {
      CINCINNATI_RETURN_IF_ERROR(
          tx_.Exec(fmt::format("DELETE FROM {} WHERE from_version = $1 AND to_version = $2", table), {key.first, key.second}).status());
    }
    CINCINNATI_ASSIGN_OR_RETURN(
        PgResult rows,
        tx_.Exec("SELECT cluster, result, reason, component, received FROM reports WHERE from_version = $1 AND to_version = $2 "
                 "AND received > $3 AND started > $3 AND started <= received + $4 AND NOT EXISTS (SELECT 1 FROM edge_clusters e "
                 "WHERE e.from_version = $1 AND e.cluster = reports.cluster AND e.to_version <> $2) ORDER BY received",
                 {key.first, key.second, Text(since), Text(kMaxClockSkew)}));
    struct Seen {
      bool failed = false;
      std::string component;
      int64_t at = 0;
    };
    std::map<std::string, Seen> clusters;
    for (const auto& row : rows.rows) {
      UpdateReport r;
      r.result = row[1] == "Failed" ? UpdateResult::kFailed : UpdateResult::kCompleted;
      r.reason = row[2];
      Seen& seen = clusters[row[0]];
      if (!seen.failed && Counted(r)) seen = {true, row[3], Int(row[4])};
    }
    EdgeState& delta = Delta(key);
    for (const auto& [cluster, seen] : clusters) {
      CINCINNATI_RETURN_IF_ERROR(
          tx_.Exec(kAddCluster, {key.first, key.second, cluster, seen.failed ? "1" : "0", seen.component, Text(seen.at)}).status());
      ++delta.counts.clusters;
      if (seen.failed) CountFailure(delta, seen.component, seen.at);
    }
    return Flush();
  }

 private:
  EdgeState& Delta(const EdgeKey& key) {
    auto [at, added] = totals_.try_emplace(key);
    if (added) at->second = EdgeState{key.first, key.second, {}, 0, {}};
    return at->second;
  }

  PostgresTransaction& tx_;
  const ReportLedger::Options& options_;
  std::map<EdgeKey, EdgeState> totals_;  // counted in this transaction, not yet in edge_counts
};

PostgresReportStore::PostgresReportStore(const std::string& conninfo, ReportLedger::Options options)
    : options_(std::move(options)),
      described_("PostgreSQL " + postgres::RedactedConninfo(conninfo)),
      session_(postgres::WithClientLimits(conninfo, "cincinnati-graph-builder"), "SET statement_timeout = 10000",
               "reports on " + described_) {}

PostgresReportStore::~PostgresReportStore() = default;

Result<std::unique_ptr<PostgresReportStore>> PostgresReportStore::Open(const std::string& conninfo, ReportLedger::Options options) {
  std::unique_ptr<PostgresReportStore> store(new PostgresReportStore(conninfo, std::move(options)));
  std::lock_guard lock(store->mu_);
  CINCINNATI_RETURN_IF_ERROR(store->session_.InTransaction([](PostgresTransaction& tx) {
    CINCINNATI_RETURN_IF_ERROR(tx.Exec("SELECT pg_advisory_xact_lock($1)", {Text(kSchemaLockKey)}).status());
    for (const char* sql : kSchema) CINCINNATI_RETURN_IF_ERROR(tx.Exec(sql).status());
    return Status::OK();
  }));
  return store;
}

Result<ReportStore::Recorded> PostgresReportStore::Record(const std::vector<UpdateReport>& batch, int64_t received,
                                                          const Decide& decide) {
  for (const UpdateReport& r : batch) CINCINNATI_RETURN_IF_ERROR(ValidateUpdateReport(r));
  std::set<int64_t> keys;
  for (const UpdateReport& r : batch) {
    keys.insert(LockKey("edge", r.from, r.to));
    // By cluster alone: it covers "one edge out of a version" (from, cluster) and the
    // reports' key (cluster, attempt), which two batches could otherwise insert in
    // opposite orders.
    keys.insert(LockKey("cluster", "", r.cluster_id));
  }
  Recorded out;
  std::lock_guard lock(mu_);
  now_ = std::max(now_, received);
  const Status done = session_.InTransaction([&](PostgresTransaction& tx) {
    out = Recorded{};
    Batch b(tx, options_);
    CINCINNATI_RETURN_IF_ERROR(b.Lock(keys));
    std::set<EdgeKey> touched;
    for (const UpdateReport& r : batch) {
      CINCINNATI_ASSIGN_OR_RETURN(bool inserted, b.Insert(r, received));
      out.outcomes.push_back(inserted ? ReportLedger::Outcome::kRecorded : ReportLedger::Outcome::kDuplicate);
      if (!inserted) continue;
      CINCINNATI_RETURN_IF_ERROR(b.Track(r, received));
      touched.insert({r.from, r.to});
      if (r.result == UpdateResult::kStarted) continue;
      CINCINNATI_RETURN_IF_ERROR(b.Count(r, received));
      touched.insert({r.from, r.to});
    }
    CINCINNATI_RETURN_IF_ERROR(b.Flush());
    for (const EdgeKey& key : touched) {
      CINCINNATI_ASSIGN_OR_RETURN(std::optional<BrakeRecord> brake, b.DecideEdge(key, decide, received));
      if (brake) out.braked.push_back(std::move(*brake));
    }
    return Status::OK();
  });
  if (!done.ok()) return done;
  return out;
}

Result<std::vector<BrakeRecord>> PostgresReportStore::Reconsider(const std::vector<EdgeKey>& edges, const Decide& decide) {
  std::vector<BrakeRecord> braked;
  std::lock_guard lock(mu_);
  for (const EdgeKey& key : edges) {
    // One transaction per edge: one edge that fails leaves the others decided.
    const Status done = session_.InTransaction([&](PostgresTransaction& tx) {
      Batch b(tx, options_);
      CINCINNATI_RETURN_IF_ERROR(b.Lock({LockKey("edge", key.first, key.second)}));
      CINCINNATI_ASSIGN_OR_RETURN(std::optional<BrakeRecord> brake, b.DecideEdge(key, decide, now_));
      if (brake) braked.push_back(std::move(*brake));
      return Status::OK();
    });
    if (!done.ok()) spdlog::error("brakes: {} -> {} not reconsidered: {}", key.first, key.second, done.message());
  }
  return braked;
}

Result<std::vector<BrakeRecord>> PostgresReportStore::Brakes() const {
  std::lock_guard lock(mu_);
  CINCINNATI_ASSIGN_OR_RETURN(PgResult rows, session_.Exec("SELECT from_version, to_version, state, since, first_failure, clusters, "
                                                           "failures, lower_bound, message, evidence, \"by\", note FROM brakes "
                                                           "ORDER BY from_version, to_version"));
  std::vector<BrakeRecord> out;
  for (const auto& row : rows.rows) {
    if (row.size() == 12) out.push_back(BrakeOfRow(row));
  }
  return out;
}

Result<BrakeRecord> PostgresReportStore::ChangeState(const EdgeKey& edge, BrakeState state, const std::string& by,
                                                     const std::string& note, std::string_view action, int64_t now) {
  std::lock_guard lock(mu_);
  BrakeRecord changed;
  CINCINNATI_RETURN_IF_ERROR(session_.InTransaction([&](PostgresTransaction& tx) {
    Batch b(tx, options_);
    CINCINNATI_RETURN_IF_ERROR(b.Lock({LockKey("edge", edge.first, edge.second)}));
    CINCINNATI_ASSIGN_OR_RETURN(PgResult current, tx.Exec("SELECT state FROM brakes WHERE from_version = $1 AND to_version = $2 "
                                                          "FOR UPDATE",
                                                          {edge.first, edge.second}));
    if (current.rows.empty() || !InForceState(BrakeStateOf(current.rows[0][0]))) {
      return Status::NotFound(fmt::format("no brake is in force on {} -> {}", edge.first, edge.second));
    }
    if (state == BrakeState::kCleared) CINCINNATI_RETURN_IF_ERROR(b.Restart(edge, now));
    // Only what a person changes: the decision's own record stays as the database has it.
    CINCINNATI_ASSIGN_OR_RETURN(
        PgResult row, tx.Exec("UPDATE brakes SET state = $3, \"by\" = $4, note = $5 WHERE from_version = $1 AND to_version = $2 "
                              "RETURNING from_version, to_version, state, since, first_failure, clusters, failures, lower_bound, "
                              "message, evidence, \"by\", note",
                              {edge.first, edge.second, std::string(BrakeStateName(state)), by, note}));
    if (row.rows.size() != 1 || row.rows[0].size() != 12) return Status::IoError("brakes: the changed row did not come back");
    changed = BrakeOfRow(row.rows[0]);
    return b.Logged(changed, action, now);
  }));
  return changed;
}

Result<int64_t> PostgresReportStore::ChangeMark() const {
  std::lock_guard lock(mu_);
  CINCINNATI_ASSIGN_OR_RETURN(PgResult mark, session_.Exec("SELECT n FROM brake_mark WHERE id = 1"));
  return mark.rows.empty() ? 0 : Int(mark.rows[0][0]);
}

Result<int64_t> PostgresReportStore::Prune(int64_t before) {
  // In chunks, each a statement of its own: a backlog never runs into the statement
  // timeout, and batches and Follow get the connection in between.
  constexpr size_t kChunk = 5000;
  int64_t gone = 0;
  for (const char* table : {"reports", "attempt_starts"}) {
    for (;;) {
      std::lock_guard lock(mu_);
      CINCINNATI_ASSIGN_OR_RETURN(
          PgResult chunk, session_.Exec(fmt::format("DELETE FROM {0} WHERE ctid IN (SELECT ctid FROM {0} WHERE received < $1 LIMIT $2)",
                                                    table),
                                        {Text(before), Text(kChunk)}));
      gone += static_cast<int64_t>(chunk.affected);
      if (chunk.affected < kChunk) break;
    }
  }
  return gone;
}

Status PostgresReportStore::ClampEpochs(int64_t now) {
  std::lock_guard lock(mu_);
  // A clear made while some replica's clock was ahead: no report would count until then.
  CINCINNATI_ASSIGN_OR_RETURN(PgResult moved, session_.Exec("UPDATE edge_epochs SET since = $1::bigint WHERE since > $1::bigint + $2::bigint "
                                                            "RETURNING from_version, to_version",
                                                            {Text(now), Text(kMaxClockSkew)}));
  for (const auto& row : moved.rows) {
    spdlog::warn("brakes: the count of {} -> {} restarted ahead of this clock (it was ahead when a brake was cleared): it counts "
                 "from now on",
                 row[0], row[1]);
  }
  return Status::OK();
}

EdgeState PostgresReportStore::Edge(const std::string& from, const std::string& to) const {
  std::lock_guard lock(mu_);
  EdgeState edge{from, to, {}, 0, {}};
  const Status read = session_.InTransaction([&](PostgresTransaction& tx) {
    Batch b(tx, options_);
    // Settling writes the edge's summary (postgres_attempts.h): under its lock, as a decision.
    CINCINNATI_RETURN_IF_ERROR(b.Lock({LockKey("edge", from, to)}));
    CINCINNATI_ASSIGN_OR_RETURN(edge, b.Edge({from, to}, now_));
    return Status::OK();
  });
  if (!read.ok()) spdlog::error("brakes: the counts of {} -> {}: {}", from, to, read.message());
  return edge;
}

Result<std::vector<EdgeKey>> PostgresReportStore::EdgesWithFailures() const {
  std::lock_guard lock(mu_);
  CINCINNATI_ASSIGN_OR_RETURN(PgResult rows,
                              session_.Exec("SELECT from_version, to_version FROM edge_counts WHERE failures > 0"));
  std::vector<EdgeKey> out;
  for (const auto& row : rows.rows) out.emplace_back(row[0], row[1]);
  return out;
}

Result<std::vector<EdgeKey>> PostgresReportStore::Tick(int64_t now) {
  std::lock_guard lock(mu_);
  now_ = std::max(now_, now);
  CINCINNATI_ASSIGN_OR_RETURN(PgResult rows, session_.Exec("SELECT DISTINCT from_version, to_version FROM edge_attempts WHERE "
                                                           "started > $1::bigint",
                                                           {Text(now_ - kStartHorizon)}));
  std::vector<EdgeKey> out;
  for (const auto& row : rows.rows) out.emplace_back(row[0], row[1]);
  return out;
}

int64_t PostgresReportStore::reports() const {
  std::lock_guard lock(mu_);
  auto count = session_.Exec("SELECT (SELECT count(*) FROM reports) + (SELECT count(*) FROM attempt_starts)");
  return count.ok() && !count->rows.empty() ? Int(count->rows[0][0]) : -1;
}

}  // namespace cincinnati::reports
