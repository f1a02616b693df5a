// Database and Statement: the one SQLite wrapper of the project's stores (the report
// ledger and brake board, the cluster directory, the upgrade operator's state).
//
// A Database is one connection, closed when it goes. Open applies the project's
// settings: a busy timeout, and for a durable store WAL with synchronous=FULL, so that
// a committed transaction survives kill -9 and power loss. Every error is a Status
// whose message starts with the database's name ("report ledger /var/x/reports.db: ...")
// and ends with SQLite's own words; a write refused by a constraint (a primary key
// taken) is a Conflict, any other failure an IoError.
//
// A Statement is one prepared statement, finalized on every path. Binds are 1-based,
// columns 0-based, as in SQLite. Step reads one row at a time; Run steps a statement
// that returns no rows. Reset makes a statement ready for new binds.
//
// Neither throws. A Database opened `shared` may be used by several threads (SQLite
// serializes them); a Statement belongs to one thread at a time, and must not outlive
// its Database.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace cincinnati::sqlite {

class Database;

class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& Bind(int index, std::string_view text);
  Statement& Bind(int index, int64_t value);
  Statement& BindReal(int index, double value);

  // True with a row to read, false once there is none; an error otherwise.
  Result<bool> Step();
  // Steps a statement that returns no rows (a write) to its end.
  Status Run();
  // Steps through every row, calling `row` on each (it reads the columns).
  Status ForEachRow(const std::function<void()>& row);
  // Ready to run again: the read or write under way ends and the binds are cleared.
  void Reset();

  int columns() const;
  std::string Text(int column) const;  // "" for NULL
  int64_t Integer(int column) const;
  double Real(int column) const;

 private:
  friend class Database;
  Statement(const Database* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  const Database* db_;
  sqlite3_stmt* stmt_;
};

class Database {
 public:
  struct Options {
    enum class Access { kReadOnly, kReadWrite, kCreate };  // kCreate: read-write, the file made when missing
    Access access = Access::kCreate;
    // WAL and synchronous=FULL (the project's pragmas for the state it keeps). Off for
    // a file read only, or one kept in rollback-journal mode on purpose.
    bool durable = true;
    // One connection shared by threads (serialized by SQLite); off for a connection
    // that its owner locks itself.
    bool shared = true;
    std::chrono::milliseconds busy_timeout{5000};
  };

  // `name` starts every error message; it usually names the store and its file.
  static Result<std::unique_ptr<Database>> Open(const std::string& path, std::string name, const Options& options);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs SQL without parameters (one statement or several; the schema).
  Status Exec(std::string_view sql);
  Result<Statement> Prepare(std::string_view sql) const;

  // A write transaction, taken at once (BEGIN IMMEDIATE), and its end.
  Status Begin();
  Status Commit();
  void Rollback();  // when a transaction is open; nothing otherwise

  // Rows changed by the newest INSERT, UPDATE or DELETE on this connection.
  int64_t changes() const;
  const std::string& name() const { return name_; }

  // An IoError "<name>: <what>: <SQLite's last error>"; an open transaction is rolled
  // back, so that a failed step leaves nothing half-written.
  Status Failure(std::string_view what);

 private:
  friend class Statement;
  Database(sqlite3* db, std::string name) : db_(db), name_(std::move(name)) {}
  // The error SQLite's result `rc` stands for, "<name>: <SQLite's last error>".
  Status Error(int rc) const;
  sqlite3* db_;
  std::string name_;
};

}  // namespace cincinnati::sqlite
