// Statement: one prepared SQLite statement, finalized on every path, with typed binds
// and reads (the report ledger's and the brake board's). Not thread-safe.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "core/status.h"

namespace cincinnati::reports {

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { ok_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) == SQLITE_OK; }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return ok_; }
  Statement& Bind(int i, const std::string& text) {
    sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& Bind(int i, int64_t value) {
    sqlite3_bind_int64(stmt_, i, value);
    return *this;
  }
  Statement& BindReal(int i, double value) {
    sqlite3_bind_double(stmt_, i, value);
    return *this;
  }
  int Step() { return sqlite3_step(stmt_); }
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::string Text(int column) const {
    const unsigned char* t = sqlite3_column_text(stmt_, column);
    return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(stmt_, column))) : "";
  }
  int64_t Integer(int column) const { return sqlite3_column_int64(stmt_, column); }
  double Real(int column) const { return sqlite3_column_double(stmt_, column); }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  bool ok_ = false;
};

// Rolls back the open transaction, if any, and returns an IoError naming `file` and `what`.
Status SqliteFailure(sqlite3* db, const std::string& file, const char* what);

}  // namespace cincinnati::reports
