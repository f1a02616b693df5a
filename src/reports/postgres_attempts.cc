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
    return tx.Exec("UPDATE edge_attempts SET failed = $4, resolved = $5, settled = CASE WHEN known_bad <> 0 THEN 0 ELSE settled END "
                    "WHERE from_version = $1 AND to_version = $2 AND cluster = $3",
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

namespace {

// What a settled row adds to the final counts, exactly as ReplayAttempts' settler gives
// it (start_order.h) once `now` is `horizon` past the row's start: a known-bad site's
// resolved attempt goes to `excluded` whenever its report comes; any other attempt is
// counted if it entered the settler within the horizon (announced, or reported, before
// its start + horizon): a failure when it failed or had not ended by then (stuck); one
// that first came after the horizon is late and not counted.
void FoldSettled(const AttemptRow& row, int64_t horizon, SequentialCounts& settled) {
  if (row.known_bad) {
    if (row.resolved > 0) {
      ++settled.excluded;
      settled.excluded_failures += row.failed > 0;
    }
    return;
  }
  const int64_t end = row.started + horizon;
  const bool ended_in_time = row.resolved > 0 && row.resolved < end;
  if (!ended_in_time && !(row.announced > 0 && row.announced < end)) return;  // late
  ++settled.clusters;
  settled.failures += ended_in_time ? row.failed > 0 : 1;
}

// Settled: nothing later can change what it adds (FoldSettled). A known-bad site's
// attempt is settled once reported (its outcome counts at once) or, unreported, past the
// horizon (a report then unsettles it again: TrackAttempt).
bool Settles(const AttemptRow& row, int64_t horizon, int64_t now) {
  return row.started + horizon <= now || (row.known_bad && row.resolved > 0);
}

}  // namespace

Status SettleAttempts(PostgresTransaction& tx, EdgeState& edge, int64_t now) {
  const int64_t horizon = LedgerStartOrder().horizon_secs;
  CINCINNATI_ASSIGN_OR_RETURN(PgResult summary, tx.Exec("SELECT clusters, failures, excluded, excluded_failures, through FROM "
                                                         "edge_settled WHERE from_version = $1 AND to_version = $2",
                                                         {edge.from, edge.to}));
  SequentialCounts settled;
  int64_t through = -1;  // the time the summary was settled at; never goes back, across replicas
  if (!summary.rows.empty()) {
    const auto& row = summary.rows[0];
    settled = {Int(row[0]), Int(row[1]), Int(row[2]), Int(row[3])};
    through = Int(row[4]);
    now = std::max(now, through);
  }
  CINCINNATI_ASSIGN_OR_RETURN(PgResult rows, tx.Exec("SELECT cluster, started, announced, failed, resolved, known_bad FROM "
                                                      "edge_attempts WHERE from_version = $1 AND to_version = $2 AND settled = 0",
                                                      {edge.from, edge.to}));
  std::vector<AttemptRow> open;
  for (const auto& row : rows.rows) {
    open.push_back({row[0], Int(row[1]), Int(row[2]), Int(row[3]), Int(row[4]), Int(row[5]) != 0});
    now = std::max({now, open.back().announced, open.back().resolved});
  }
  const size_t unsettled = open.size();
  std::erase_if(open, [&](const AttemptRow& row) {
    if (!Settles(row, horizon, now)) return false;
    FoldSettled(row, horizon, settled);
    return true;
  });
  if (open.size() < unsettled) {
    // The same test as Settles, in SQL, on the rows just read (the edge's lock holds them).
    CINCINNATI_RETURN_IF_ERROR(tx.Exec("UPDATE edge_attempts SET settled = 1 WHERE from_version = $1 AND to_version = $2 AND "
                                        "settled = 0 AND (started + $3::bigint <= $4::bigint OR (known_bad <> 0 AND resolved > 0))",
                                        {edge.from, edge.to, Text(horizon), Text(now)})
                                   .status());
  }
  if (open.size() < unsettled || now > through) {
    CINCINNATI_RETURN_IF_ERROR(
        tx.Exec("INSERT INTO edge_settled(from_version, to_version, clusters, failures, excluded, excluded_failures, through) "
                "VALUES($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (from_version, to_version) DO UPDATE SET clusters = EXCLUDED.clusters, "
                "failures = EXCLUDED.failures, excluded = EXCLUDED.excluded, excluded_failures = EXCLUDED.excluded_failures, "
                "through = EXCLUDED.through",
                {edge.from, edge.to, Text(settled.clusters), Text(settled.failures), Text(settled.excluded),
                 Text(settled.excluded_failures), Text(now)})
            .status());
  }
  // The rest started within the horizon: replayed, their counts added to the settled ones.
  const std::unique_ptr<StartOrderSettler> settler = ReplayAttempts(open);
  edge.prefixes = settler->Settle(now);
  for (SequentialCounts& prefix : edge.prefixes) {
    prefix.clusters += settled.clusters;
    prefix.failures += settled.failures;
    prefix.excluded += settled.excluded;
    prefix.excluded_failures += settled.excluded_failures;
  }
  edge.recent_attempts = settler->recent();
  return Status::OK();
}

}  // namespace cincinnati::reports
