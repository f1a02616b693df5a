#include "operator/state_store.h"

#include <fmt/format.h>

#include <mutex>

#include "sqlite/database.h"

namespace cincinnati::upgrade {
namespace {

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS configs (cluster TEXT PRIMARY KEY, document TEXT NOT NULL)",
    ("CREATE TABLE IF NOT EXISTS notifications (cluster TEXT NOT NULL, version TEXT NOT NULL, event TEXT NOT NULL, "
     "sent_at TEXT NOT NULL, PRIMARY KEY (cluster, version, event))"),
    "CREATE TABLE IF NOT EXISTS flags (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
};

class SqliteStateStore final : public StateStore {
 public:
  SqliteStateStore(std::unique_ptr<sqlite::Database> db, std::string path) : db_(std::move(db)), path_(std::move(path)) {}

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
  std::unique_ptr<sqlite::Database> db_;
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
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<sqlite::Database> db,
                              sqlite::Database::Open(path, "the operator's state " + path, sqlite::Database::Options{}));
  for (const char* sql : kSchema) CINCINNATI_RETURN_IF_ERROR(db->Exec(sql));
  return std::unique_ptr<StateStore>(std::make_unique<SqliteStateStore>(std::move(db), path));
}

Result<std::vector<std::vector<std::string>>> SqliteStateStore::Query(const std::string& sql, const std::vector<std::string>& args) {
  CINCINNATI_ASSIGN_OR_RETURN(sqlite::Statement query, db_->Prepare(sql));
  for (size_t i = 0; i < args.size(); ++i) query.Bind(static_cast<int>(i + 1), args[i]);
  std::vector<std::vector<std::string>> rows;
  CINCINNATI_RETURN_IF_ERROR(query.ForEachRow([&] {
    std::vector<std::string> row;
    for (int c = 0; c < query.columns(); ++c) row.push_back(query.Text(c));
    rows.push_back(std::move(row));
  }));
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
  return db_->changes() == 1;
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
