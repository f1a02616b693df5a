// StateStore: the upgrade operator's durable state, three tables:
//   configs(cluster PRIMARY KEY, document)            each cluster's UpgradeConfig, spec and status (JSON)
//   notifications(cluster, version, event, sent_at)   the ledger: a notification is sent at most once
//   flags(key PRIMARY KEY, value)                      fleet controls (pause) and step markers
// Two implementations: an embedded SQLite file (Open below; WAL, synchronous=FULL: a
// committed write survives kill -9 and power loss), and PostgreSQL (postgres_state.h),
// shared by replicas of which one leads. A write by a replica that does not lead is
// refused with a Conflict status (fencing, see leadership.h), so a replica that lost
// its leadership cannot change what the new leader acts on.
// Thread-safe; never throws; errors name the file or the database.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "operator/upgrade_config.h"

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

// A config document as stored (ToJson of the config), read back for `cluster`; `store`
// names the file or database in errors. Both stores read through it.
Result<UpgradeConfig> DecodeStoredConfig(const std::string& store, const std::string& cluster, const std::string& document);

class StateStore : public FlagStore {
 public:
  // The SQLite file at `path` (created when missing).
  static Result<std::unique_ptr<StateStore>> Open(const std::string& path);
  ~StateStore() override = default;

  virtual Result<std::vector<UpgradeConfig>> LoadConfigs() = 0;
  virtual Result<std::optional<UpgradeConfig>> GetConfig(const std::string& cluster) = 0;
  virtual Status PutConfig(const UpgradeConfig& config) = 0;  // keyed by config.cluster
  virtual Status DeleteConfig(const std::string& cluster) = 0;

  // The ledger. Claim records (cluster, version, event) and returns true when it was not
  // there (the caller sends, then keeps the claim; on a failed send it calls Unclaim so
  // the next pass retries). A claim survives a crash: at most once, as the reference.
  virtual Result<bool> Claim(const std::string& cluster, const std::string& version, const std::string& event,
                             const std::string& now) = 0;
  virtual Status Unclaim(const std::string& cluster, const std::string& version, const std::string& event) = 0;
  virtual Result<bool> Claimed(const std::string& cluster, const std::string& version, const std::string& event) = 0;
  struct LedgerEntry {
    std::string cluster, version, event, sent_at;
  };
  virtual Result<std::vector<LedgerEntry>> Ledger(const std::string& cluster) = 0;

  virtual Result<std::vector<std::pair<std::string, std::string>>> Flags(const std::string& prefix) = 0;
};

}  // namespace cincinnati::upgrade
