// The sequential rule's state in the PostgreSQL store (postgres_report_store.h), as
// the SQLite ledger keeps it (report_ledger.h, ledger_attempts.cc): tables
// edge_attempts and cluster_outcomes, in the caller's transaction.
//  - TrackAttempt: a recorded report's attempt (Started or final; `counted`: a failure
//    that counts), under the same rules as the ledger's (the edge's restart, one edge
//    out of a version, the start clamped, the known-bad bit from the cluster's last
//    outcome elsewhere). A known-bad site's report unsettles its attempt (its outcome is
//    counted at the next settle).
//  - SettleAttempts: the edge's prefixes and `recent_attempts` at `now` or the latest
//    event, whichever is later (and never before a time it settled at, whichever replica
//    did), equal to replaying all its attempts into a settler (ReplayAttempts). Cost: it
//    reads only the attempts not settled yet (started within the horizon, or a known-bad
//    site's unreported one), replays them, and adds the counts of the settled rest, kept
//    in edge_settled; attempts crossing the horizon are folded into those counts (and
//    marked settled) as the settler would count them: stuck = failure, late = not
//    counted, a known-bad site's = excluded. So a decision costs O(attempts in the
//    horizon), not O(all attempts of the edge): over a rollout of 10,000 clusters,
//    linear, not quadratic. Call it under the edge's lock (it writes).
// Never throws.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "core/update_report.h"
#include "postgres/postgres_session.h"
#include "reports/report_ledger.h"

namespace cincinnati::reports {

Status TrackAttempt(postgres::PostgresTransaction& tx, const UpdateReport& r, int64_t received, bool counted);
Status SettleAttempts(postgres::PostgresTransaction& tx, EdgeState& edge, int64_t now);

}  // namespace cincinnati::reports
