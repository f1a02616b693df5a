// PostgresSession: one connection to PostgreSQL, opened on first use and again after
// a failure, with statements in and rows of text out. libpqxx stays behind this header
// (its include path and exceptions reach nothing else): every error is a Status that
// names the session, a lost connection included.
//
// `setup` runs once on each new connection (SET statement_timeout, ...). Parameters are
// text, bound as $1, $2, ...; a NULL column reads as "". Not thread-safe: one caller at
// a time (its owners hold a mutex).
//
// Every call is bounded on the client side by the session's `deadline`: a server that
// does not answer at all (stopped, hung, or a peer whose socket stays open, as a Unix
// socket does while the server is SIGSTOPped: no keepalive or user timeout applies
// there) fails the call with an IoError ("no answer within N ms") once the deadline
// passes. One watchdog thread for the process shuts the connection's socket down
// (shutdown(2), so libpq's wait ends at once and the descriptor is never closed under
// it); the connection is dropped, and the next call opens a new one. Opening a
// connection is bounded by connect_timeout (WithClientLimits). libpqxx never reconnects
// behind the session's back (reactivation is inhibited), so connected() stays true only
// for the connection a session lock was taken on.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace cincinnati::postgres {

struct PgResult {
  std::vector<std::vector<std::string>> rows;
  size_t affected = 0;  // rows an INSERT, UPDATE or DELETE changed
};

// `conninfo` (a postgresql:// URL or key=value words) with any password replaced by
// "***": what logs and error messages may show.
std::string RedactedConninfo(std::string_view conninfo);

// The statements of one transaction under way (PostgresSession::InTransaction). After
// an error every later Exec fails too, and nothing is committed.
class PostgresTransaction {
 public:
  virtual ~PostgresTransaction() = default;
  virtual Result<PgResult> Exec(const std::string& sql, const std::vector<std::string>& params = {}) = 0;
};

// `conninfo` with client-side limits added unless it sets them (connect_timeout 5 s,
// TCP keepalives, tcp_user_timeout 5 s) and `application_name`: a dead database or
// network fails a call in seconds, not when the kernel gives up on the connection
// (statement_timeout, set by a session's `setup`, is the server's and does nothing
// against a peer that is gone).
std::string WithClientLimits(const std::string& conninfo, std::string_view application_name);

// Longer than any statement_timeout its users set (30 s at most): the client's bound on
// a server that does not answer, not the server's on a slow statement.
inline constexpr std::chrono::milliseconds kDefaultCallDeadline{40000};

class PostgresSession {
 public:
  PostgresSession(std::string conninfo, std::string setup, std::string name,
                  std::chrono::milliseconds deadline = kDefaultCallDeadline);
  ~PostgresSession();
  PostgresSession(const PostgresSession&) = delete;
  PostgresSession& operator=(const PostgresSession&) = delete;

  // One statement, committed on its own.
  Result<PgResult> Exec(const std::string& sql, const std::vector<std::string>& params = {});
  // Statements in one transaction: all committed, or none.
  Status Transaction(const std::vector<std::pair<std::string, std::vector<std::string>>>& statements);
  // Runs `work` in one transaction (READ COMMITTED), committed when it returns OK and
  // every statement succeeded, rolled back otherwise: for work that reads, decides and
  // writes. The error is `work`'s own, or the statement's that failed. The deadline
  // bounds the whole transaction, as it bounds each call.
  Status InTransaction(const std::function<Status(PostgresTransaction&)>& work);
  // Ends the connection (and with it the session's locks); the next call opens one.
  void Close();
  // Whether a connection is open (a failed call closes it): a session lock is held only
  // as long as the connection that took it.
  bool connected() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cincinnati::postgres
