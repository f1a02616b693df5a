#include "operator/state_store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <mutex>

namespace cincinnati::upgrade {
namespace {

constexpr const char* kSchema[] = {
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=FULL",
    "CREATE TABLE IF NOT EXISTS configs (cluster TEXT PRIMARY KEY, document TEXT NOT NULL)",
    ("CREATE TABLE IF NOT EXISTS notifications (cluster TEXT NOT NULL, version TEXT NOT NULL, event TEXT NOT NULL, "
     "sent_at TEXT NOT NULL, PRIMARY KEY (cluster, version, event))"),
    "CREATE TABLE IF NOT EXISTS flags (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
};

struct Statement {
  sqlite3_stmt* stmt = nullptr;
  ~Statement() { sqlite3_finalize(stmt); }
};

class SqliteStateStore final : public StateStore {
 public:
  SqliteStateStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~SqliteStateStore() override { sqlite3_close(db_); }

  Result<std::vector<UpgradeConfig>> LoadConfigs() override;
  Result<std::optional<UpgradeConfig>> GetConfig(const std::string& cluster) override;
  Status PutConfig(const UpgradeConfig& config) override;
  Status DeleteConfig(const std::string& cluster) override;
  Result<bool> Claim(const std::string& cluster, const std::string& version, const std::string& event, const std::string& now) override;
  Status Unclaim(const std::string& cluster, const std::string& version, const std::string& event) override;
  Result<bool> Claimed(const std::string& cluster, const std::string& version, const std::string& event) override;
  Result<std::vector<LedgerEntry>> Ledger(const std::string& cluster) override;
  Result<std::optional<std::string>> GetFlag(const std::string& key) override;
  Status SetFlag(const std::string& key, const std::string& value) override;
  Status ClearFlag(const std::string& key) override;
  Result<std::vector<std::pair<std::string, std::string>>> Flags(const std::string& prefix) override;

 private:
  Status Exec(const std::string& sql, const std::vector<std::string>& args);
  Result<std::vector<std::vector<std::string>>> Query(const std::string& sql, const std::vector<std::string>& args);

  std::mutex mu_;
  sqlite3* db_;
  std::string path_;
};

}  // namespace

Result<UpgradeConfig> DecodeStoredConfig(const std::string& store, const std::string& cluster, const std::string& document) {
  const std::string where = fmt::format("{}: cluster {}", store, cluster);
  auto json = kube::ParseJson(document);
  if (!json.ok()) return json.status().WithContext(where);
  CINCINNATI_ASSIGN_OR_RETURN(UpgradeConfig config, UpgradeConfigFromJson(*json, where));
  config.cluster = cluster;
  return config;
}

Result<std::unique_ptr<StateStore>> StateStore::Open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
    Status error = Status::IoError(fmt::format("cannot open the operator's state {}: {}", path, db ? sqlite3_errmsg(db) : "out of memory"));
    sqlite3_close(db);
    return error;
  }
  sqlite3_busy_timeout(db, 5000);
  auto store = std::make_unique<SqliteStateStore>(db, path);
  for (const char* sql : kSchema) {
    char* message = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
      Status error = Status::IoError(fmt::format("{}: {}", path, message ? message : "error"));
      sqlite3_free(message);
      return error;
    }
  }
  return std::unique_ptr<StateStore>(std::move(store));
}

Result<std::vector<std::vector<std::string>>> SqliteStateStore::Query(const std::string& sql, const std::vector<std::string>& args) {
  Statement s;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s.stmt, nullptr) != SQLITE_OK) {
    return Status::IoError(fmt::format("{}: {}", path_, sqlite3_errmsg(db_)));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    sqlite3_bind_text(s.stmt, static_cast<int>(i + 1), args[i].data(), static_cast<int>(args[i].size()), SQLITE_TRANSIENT);
  }
  std::vector<std::vector<std::string>> rows;
  for (;;) {
    int rc = sqlite3_step(s.stmt);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return Status::IoError(fmt::format("{}: {}", path_, sqlite3_errmsg(db_)));
    std::vector<std::string> row;
    for (int c = 0; c < sqlite3_column_count(s.stmt); ++c) {
      const unsigned char* text = sqlite3_column_text(s.stmt, c);
      row.emplace_back(text ? std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(s.stmt, c)) : "");
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

Status SqliteStateStore::Exec(const std::string& sql, const std::vector<std::string>& args) {
  auto rows = Query(sql, args);
  return rows.ok() ? Status::OK() : rows.status();
}

Result<std::vector<UpgradeConfig>> SqliteStateStore::LoadConfigs() {
  std::lock_guard lock(mu_);
  CINCINNATI_ASSIGN_OR_RETURN(auto rows, Query("SELECT cluster, document FROM configs ORDER BY cluster", {}));
  std::vector<UpgradeConfig> out;
  for (const auto& row : rows) {
    CINCINNATI_ASSIGN_OR_RETURN(UpgradeConfig config, DecodeStoredConfig(path_, row[0], row[1]));
    out.push_back(std::move(config));
  }
  return out;
}

Result<std::optional<UpgradeConfig>> SqliteStateStore::GetConfig(const std::string& cluster) {
  std::lock_guard lock(mu_);
  CINCINNATI_ASSIGN_OR_RETURN(auto rows, Query("SELECT document FROM configs WHERE cluster = ?", {cluster}));
  if (rows.empty()) return std::optional<UpgradeConfig>();
  CINCINNATI_ASSIGN_OR_RETURN(UpgradeConfig config, DecodeStoredConfig(path_, cluster, rows[0][0]));
  return std::optional<UpgradeConfig>(std::move(config));
}

Status SqliteStateStore::PutConfig(const UpgradeConfig& config) {
  std::lock_guard lock(mu_);
  return Exec("INSERT INTO configs (cluster, document) VALUES (?, ?) ON CONFLICT(cluster) DO UPDATE SET document = excluded.document",
              {config.cluster, kube::WriteJson(ToJson(config))});
}

Status SqliteStateStore::DeleteConfig(const std::string& cluster) {
  std::lock_guard lock(mu_);
  return Exec("DELETE FROM configs WHERE cluster = ?", {cluster});
}

Result<bool> SqliteStateStore::Claim(const std::string& cluster, const std::string& version, const std::string& event, const std::string& now) {
  std::lock_guard lock(mu_);
  CINCINNATI_RETURN_IF_ERROR(Exec("INSERT OR IGNORE INTO notifications (cluster, version, event, sent_at) VALUES (?, ?, ?, ?)",
                                  {cluster, version, event, now}));
  return sqlite3_changes(db_) == 1;
}

Status SqliteStateStore::Unclaim(const std::string& cluster, const std::string& version, const std::string& event) {
  std::lock_guard lock(mu_);
  return Exec("DELETE FROM notifications WHERE cluster = ? AND version = ? AND event = ?", {cluster, version, event});
}

Result<bool> SqliteStateStore::Claimed(const std::string& cluster, const std::string& version, const std::string& event) {
  std::lock_guard lock(mu_);
  CINCINNATI_ASSIGN_OR_RETURN(auto rows, Query("SELECT 1 FROM notifications WHERE cluster = ? AND version = ? AND event = ?",
                                               {cluster, version, event}));
  return !rows.empty();
}

Result<std::vector<StateStore::LedgerEntry>> SqliteStateStore::Ledger(const std::string& cluster) {
  std::lock_guard lock(mu_);
  CINCINNATI_ASSIGN_OR_RETURN(auto rows, Query("SELECT cluster, version, event, sent_at FROM notifications WHERE cluster = ? "
                                               "ORDER BY sent_at, event", {cluster}));
  std::vector<LedgerEntry> out;
  for (auto& r : rows) out.push_back({r[0], r[1], r[2], r[3]});
  return out;
}

Result<std::optional<std::string>> SqliteStateStore::GetFlag(const std::string& key) {
  std::lock_guard lock(mu_);
  CINCINNATI_ASSIGN_OR_RETURN(auto rows, Query("SELECT value FROM flags WHERE key = ?", {key}));
  if (rows.empty()) return std::optional<std::string>();
  return std::optional<std::string>(rows[0][0]);
}

Status SqliteStateStore::SetFlag(const std::string& key, const std::string& value) {
  std::lock_guard lock(mu_);
  return Exec("INSERT INTO flags (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", {key, value});
}

Status SqliteStateStore::ClearFlag(const std::string& key) {
  std::lock_guard lock(mu_);
  return Exec("DELETE FROM flags WHERE key = ?", {key});
}

Result<std::vector<std::pair<std::string, std::string>>> SqliteStateStore::Flags(const std::string& prefix) {
  std::lock_guard lock(mu_);
  CINCINNATI_ASSIGN_OR_RETURN(auto rows, Query("SELECT key, value FROM flags WHERE substr(key, 1, length(?)) = ? ORDER BY key",
                                               {prefix, prefix}));
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& r : rows) out.emplace_back(r[0], r[1]);
  return out;
}

}  // namespace cincinnati::upgrade
