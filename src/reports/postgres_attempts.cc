// The PostgreSQL store's state for the sequential rule (postgres_attempts.h).
#include "reports/postgres_attempts.h"

#include <algorithm>
#include <charconv>

namespace cincinnati::reports {
namespace {

using postgres::PgResult;
using postgres::PostgresTransaction;

int64_t Int(const std::string& text) {
  int64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

std::string Text(int64_t v) { return std::to_string(v); }

}  // namespace

Status TrackAttempt(PostgresTransaction& tx, const UpdateReport& r, int64_t received, bool counted) {
  CINCINNATI_ASSIGN_OR_RETURN(PgResult epoch, tx.Exec("SELECT since FROM edge_epochs WHERE from_version = $1 AND to_version = $2",
                                                       {r.from, r.to}));
  if (!epoch.rows.empty() && (received <= Int(epoch.rows[0][0]) || r.started <= Int(epoch.rows[0][0]))) return Status::OK();
  if (r.started > received + kMaxClockSkew) return Status::OK();
  const bool start = r.result == UpdateResult::kStarted;
  const std::string failed = counted ? "1" : "0";
  CINCINNATI_ASSIGN_OR_RETURN(PgResult last, tx.Exec("SELECT failed FROM cluster_outcomes WHERE cluster = $1 AND NOT "
                                                      "(from_version = $2 AND to_version = $3)",
                                                      {r.cluster_id, r.from, r.to}));
  const bool known_bad = !last.rows.empty() && Int(last.rows[0][0]) != 0;
  if (!start) {
    CINCINNATI_RETURN_IF_ERROR(tx.Exec("INSERT INTO cluster_outcomes(cluster, from_version, to_version, failed) VALUES($1, $2, $3, $4) "
                                        "ON CONFLICT (cluster) DO UPDATE SET from_version = EXCLUDED.from_version, "
                                        "to_version = EXCLUDED.to_version, failed = EXCLUDED.failed",
                                        {r.cluster_id, r.from, r.to, failed})
                                   .status());
  }
  CINCINNATI_ASSIGN_OR_RETURN(PgResult found, tx.Exec("SELECT failed FROM edge_attempts WHERE from_version = $1 AND to_version = $2 "
                                                       "AND cluster = $3",
                                                       {r.from, r.to, r.cluster_id}));
  if (!found.rows.empty()) {
    if (start || Int(found.rows[0][0]) >= 0) return Status::OK();  // known already; its first end counts
    return tx.Exec("UPDATE edge_attempts SET failed = $4, resolved = $5 WHERE from_version = $1 AND to_version = $2 AND cluster = $3",
                    {r.from, r.to, r.cluster_id, failed, Text(received)})
        .status();
  }
  CINCINNATI_ASSIGN_OR_RETURN(PgResult other, tx.Exec("SELECT 1 FROM edge_attempts WHERE from_version = $1 AND cluster = $2 "
                                                       "AND to_version <> $3 LIMIT 1",
                                                       {r.from, r.cluster_id, r.to}));
  if (!other.rows.empty()) return Status::OK();  // counted on another edge out of this version
  return tx.Exec("INSERT INTO edge_attempts(from_version, to_version, cluster, started, announced, failed, resolved, known_bad) "
                  "VALUES($1, $2, $3, $4, $5, $6, $7, $8)",
                  {r.from, r.to, r.cluster_id, Text(ClampedStart(r.started, received)), start ? Text(received) : "0",
                   start ? "-1" : failed, start ? "0" : Text(received), known_bad ? "1" : "0"})
      .status();
}

Status SettleAttempts(PostgresTransaction& tx, EdgeState& edge, int64_t now) {
  CINCINNATI_ASSIGN_OR_RETURN(PgResult rows, tx.Exec("SELECT cluster, started, announced, failed, resolved, known_bad FROM "
                                                      "edge_attempts WHERE from_version = $1 AND to_version = $2",
                                                      {edge.from, edge.to}));
  std::vector<AttemptRow> attempts;
  for (const auto& row : rows.rows) {
    attempts.push_back({row[0], Int(row[1]), Int(row[2]), Int(row[3]), Int(row[4]), Int(row[5]) != 0});
    now = std::max({now, attempts.back().announced, attempts.back().resolved});
  }
  const std::unique_ptr<StartOrderSettler> settler = ReplayAttempts(attempts);
  edge.prefixes = settler->Settle(now);
  edge.recent_attempts = settler->recent();
  return Status::OK();
}

}  // namespace cincinnati::reports
