// StateStore: the upgrade operator's durable state, an embedded SQLite file (WAL,
// synchronous=FULL: a committed write survives kill -9 and power loss):
//   configs(cluster PRIMARY KEY, document)            each cluster's UpgradeConfig, spec and status (JSON)
//   notifications(cluster, version, event, sent_at)   the ledger: a notification is sent at most once
//   flags(key PRIMARY KEY, value)                      fleet controls (pause) and step markers
// Thread-safe (one connection behind a mutex); never throws; errors name the file.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "operator/upgrade_config.h"

struct sqlite3;

namespace cincinnati::upgrade {

// Named values that survive a restart (the flags table): what fleet_pause.h keeps its
// pause in, and what its tests replace with a store that fails.
class FlagStore {
 public:
  virtual ~FlagStore() = default;
  virtual Result<std::optional<std::string>> GetFlag(const std::string& key) = 0;
  virtual Status SetFlag(const std::string& key, const std::string& value) = 0;
  virtual Status ClearFlag(const std::string& key) = 0;
};

class StateStore : public FlagStore {
 public:
  static Result<std::unique_ptr<StateStore>> Open(const std::string& path);
  ~StateStore() override;

  Result<std::vector<UpgradeConfig>> LoadConfigs();
  Result<std::optional<UpgradeConfig>> GetConfig(const std::string& cluster);
  Status PutConfig(const UpgradeConfig& config);  // keyed by config.cluster
  Status DeleteConfig(const std::string& cluster);

  // The ledger. Claim records (cluster, version, event) and returns true when it was not
  // there (the caller sends, then keeps the claim; on a failed send it calls Unclaim so
  // the next pass retries). A claim survives a crash: at most once, as the reference.
  Result<bool> Claim(const std::string& cluster, const std::string& version, const std::string& event, const std::string& now);
  Status Unclaim(const std::string& cluster, const std::string& version, const std::string& event);
  Result<bool> Claimed(const std::string& cluster, const std::string& version, const std::string& event);
  struct LedgerEntry {
    std::string cluster, version, event, sent_at;
  };
  Result<std::vector<LedgerEntry>> Ledger(const std::string& cluster);

  Result<std::optional<std::string>> GetFlag(const std::string& key) override;
  Status SetFlag(const std::string& key, const std::string& value) override;
  Status ClearFlag(const std::string& key) override;
  Result<std::vector<std::pair<std::string, std::string>>> Flags(const std::string& prefix);

 private:
  StateStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Status Exec(const std::string& sql, const std::vector<std::string>& args);
  Result<std::vector<std::vector<std::string>>> Query(const std::string& sql, const std::vector<std::string>& args);

  std::mutex mu_;
  sqlite3* db_;
  std::string path_;
};

}  // namespace cincinnati::upgrade
