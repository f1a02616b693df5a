#include "sqlite/database.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <utility>

namespace cincinnati::sqlite {

// ---- Statement ----

Statement::Statement(Statement&& other) noexcept : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::Bind(int index, std::string_view text) {
  // SQLITE_TRANSIENT: SQLite copies the text, so a temporary may be bound.
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::Bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Statement& Statement::BindReal(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}

Result<bool> Statement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->Error(rc);
}

Status Statement::Run() {
  CINCINNATI_ASSIGN_OR_RETURN(const bool row, Step());
  if (row) return Status::Internal(fmt::format("{}: a write returned a row: {}", db_->name(), sqlite3_sql(stmt_)));
  return Status::OK();
}

Status Statement::ForEachRow(const std::function<void()>& row) {
  for (;;) {
    CINCINNATI_ASSIGN_OR_RETURN(const bool more, Step());
    if (!more) return Status::OK();
    row();
  }
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int Statement::columns() const { return sqlite3_column_count(stmt_); }

std::string Statement::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (!text) return "";
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

int64_t Statement::Integer(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::Real(int column) const { return sqlite3_column_double(stmt_, column); }

// ---- Database ----

Result<std::unique_ptr<Database>> Database::Open(const std::string& path, std::string name, const Options& options) {
  int flags = options.access == Options::Access::kReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (options.access == Options::Access::kCreate) flags |= SQLITE_OPEN_CREATE;
  flags |= options.shared ? SQLITE_OPEN_FULLMUTEX : SQLITE_OPEN_NOMUTEX;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    // A handle comes back even on failure (to say why), except when memory ran out.
    const std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close_v2(db);
    return Status::IoError(fmt::format("{}: {}", name, why));
  }
  sqlite3_busy_timeout(db, static_cast<int>(options.busy_timeout.count()));
  std::unique_ptr<Database> out(new Database(db, std::move(name)));
  if (options.durable) {
    CINCINNATI_RETURN_IF_ERROR(out->Exec("PRAGMA journal_mode=WAL"));
    CINCINNATI_RETURN_IF_ERROR(out->Exec("PRAGMA synchronous=FULL"));
  }
  return out;
}

Database::~Database() { sqlite3_close_v2(db_); }

Status Database::Exec(std::string_view sql) {
  const std::string text(sql);  // sqlite3_exec reads up to a NUL
  char* message = nullptr;
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    Status error = Status::IoError(fmt::format("{}: {}", name_, message ? message : sqlite3_errmsg(db_)));
    sqlite3_free(message);
    return error;
  }
  return Status::OK();
}

Result<Statement> Database::Prepare(std::string_view sql) const {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return Error(rc);
  }
  return Statement(this, stmt);
}

Status Database::Begin() { return Exec("BEGIN IMMEDIATE"); }

Status Database::Commit() { return Exec("COMMIT"); }

void Database::Rollback() {
  if (sqlite3_get_autocommit(db_) == 0) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

int64_t Database::changes() const { return sqlite3_changes(db_); }

Status Database::Failure(std::string_view what) {
  Status s = Status::IoError(fmt::format("{}: {}: {}", name_, what, sqlite3_errmsg(db_)));
  Rollback();
  return s;
}

Status Database::Error(int rc) const {
  std::string message = fmt::format("{}: {}", name_, sqlite3_errmsg(db_));
  // The low byte is the primary code, whether extended codes are on or not.
  if ((rc & 0xff) == SQLITE_CONSTRAINT) return Status::Conflict(std::move(message));
  return Status::IoError(std::move(message));
}

}  // namespace cincinnati::sqlite
