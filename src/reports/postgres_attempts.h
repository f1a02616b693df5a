// The sequential rule's state in the PostgreSQL store (postgres_report_store.h), as
// the SQLite ledger keeps it (report_ledger.h, ledger_attempts.cc): tables
// edge_attempts and cluster_outcomes, in the caller's transaction.
//  - TrackAttempt: a recorded report's attempt (Started or final; `counted`: a failure
//    that counts), under the same rules as the ledger's (the edge's restart, one edge
//    out of a version, the start clamped, the known-bad bit from the cluster's last
//    outcome elsewhere).
//  - SettleAttempts: the edge's attempts, every replica's, replayed into a settler and
//    settled at `now` or the latest event, whichever is later; fills `prefixes` and
//    `recent_attempts`. Costs one read of the edge's attempts.
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
