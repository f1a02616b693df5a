// PostgresState: the upgrade operator's state in PostgreSQL, so that two or more
// replicas share one state and one of them leads (--state.postgres URL).
//
// Tables (created when missing, under a transaction-scoped advisory lock so that
// replicas starting together do not race): configs, notifications and flags as in
// state_store.h, and leader(id = 1, epoch, holder, since, renewed_at, ended_cleanly).
//
// Leadership is a session-level advisory lock held by one connection of the leader (the
// lock session). Taking it bumps leader.epoch; every write of the store checks, in the
// same statement, that the epoch is still the one this replica took (a row lock FOR
// SHARE on the leader row orders it against the next leader's bump), so a replica that
// lost its leadership cannot write even before it notices. A refused write is a
// Conflict status that names the leader.
//
// The lease (4 s by default): the leader renews every second, writing leader.renewed_at
// on its lock session, which sets idle_session_timeout to the lease; so a leader whose
// host or network dies loses the lock after the lease even without kill -9's closed
// socket, and a leader that cannot renew stops starting side effects 2 s before its lease
// ends (leadership.h). A new leader waits out its predecessor's lease and longest call
// from renewed_at (PredecessorGrace) before it acts, unless that term ended cleanly:
// Release, when the operator's settle check says every side effect of the term is over,
// sets leader.ended_cleanly on the lock session, still holding the lock, and only where
// the epoch is its own (so only the epoch's holder can, and the next leader's bump,
// which clears it, comes after), then closes the session. A successor that reads it
// for the epoch it supersedes has no grace to wait. A kill -9, a lost session or a
// check that says no records nothing. PostgreSQL 14 or later (Open checks); the lock
// needs a real session, so no PgBouncer in transaction-pooling mode between.
//
// Who leads is read when the state is opened (a standby names the leader in its first
// answers) and at each election round this replica loses; a term ended cleanly names
// nobody.
//
// Connections: the lock session, and a pool of 8 for the store's statements (so passes on
// many threads write at once; one statement at a time on each; each reopened after a
// failure; a caller waits for a free one). All carry client-side time limits (connect 5 s,
// TCP user timeout and keepalives 5 s; postgres::WithClientLimits) and a client-side
// deadline on every call (postgres_session.h), so that no call waits long on a server
// that is dead, or alive and silent (SIGSTOPped, over a Unix socket): 12 s on the store's
// sessions (statement_timeout 10 s), the lease on the lock session, so a renewal that
// gets no answer fails within the lease and the leader steps down. Passwords belong in
// ~/.pgpass or PGPASSWORD; postgres::RedactedConninfo hides one given in the URL from
// logs.
//
// Several fleets in one database: give each its own schema (options=-csearch_path=NAME
// in the URL). Thread-safe; never throws (libpqxx's exceptions end at this module).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "operator/leadership.h"
#include "operator/state_store.h"

namespace cincinnati::upgrade {

struct PostgresState {
  std::unique_ptr<StateStore> store;
  std::unique_ptr<Leadership> leadership;
};

// `url`: a libpq connection URI or keyword string. `holder`: this replica's name.
Result<PostgresState> OpenPostgresState(const std::string& url, const std::string& holder,
                                        std::chrono::seconds lease = std::chrono::seconds(4));


}  // namespace cincinnati::upgrade
