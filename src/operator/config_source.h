// Where the operator's UpgradeConfigs come from, as the managed-upgrade operator's
// configManager sources do: LOCAL, a directory of UpgradeConfig files (one per
// cluster, re-read at every round), or OCM, an upgrade-policy service
// (policy_service.h) asked every configManager.watchInterval.
//
// A read says which specs exist and which clusters it could not read: the operator
// leaves an unreadable cluster's config as it is (never takes it for a deletion) and,
// when `keep_unlisted` is set, deletes nothing. Never throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "env/clock.h"
#include "operator/policy_service.h"
#include "operator/upgrade_config.h"

namespace cincinnati::upgrade {

struct SourceRead {
  std::map<std::string, UpgradeConfigSpec> specs;  // cluster -> spec
  std::vector<std::string> unreadable;             // clusters left as they are ("*": all)
  // Why, by cluster (LOCAL: the cluster a file named last, else its file name), for the
  // administrator's view.
  std::map<std::string, std::string> problems;
  // A file could not be read and nobody knows which cluster it is for (its labels name
  // it, and it has not been read since the operator started): nothing is deleted.
  bool keep_unlisted = false;
  bool refreshed = true;  // false: the source's previous read, repeated
  bool Unreadable(const std::string& cluster) const;
};

class ConfigSource {
 public:
  virtual ~ConfigSource() = default;
  virtual SourceRead Read() = 0;
};

// LOCAL: every entry named *.yaml, *.yml or *.json is a config, for the cluster its
// metadata.labels.cluster names, else its file name without extension. One that cannot
// be read (not a regular file, a symlink loop, over the size limit, invalid) leaves its
// cluster's config as it is. The source remembers which cluster each file named when
// it last read, so an unreadable file keeps the cluster it is for even when that comes
// from its labels; a file never read whole since the start stops every deletion until
// it reads. A directory that cannot be listed leaves every config as it is.
class LocalConfigSource final : public ConfigSource {
 public:
  explicit LocalConfigSource(std::string dir) : dir_(std::move(dir)) {}
  SourceRead Read() override;

 private:
  // A file is parsed again only when its inode, size, mtime or ctime changed: a fleet's
  // thousands of files are read every second. A file changed less than 2 s before it was
  // parsed is parsed again next time (as git treats "racy" files): two writes within one
  // tick of the file system's clock leave the same times.
  struct Parsed {
    uint64_t inode = 0, size = 0;
    int64_t mtime_ns = 0, ctime_ns = 0;
    bool settled = false;  // its times were 2 s old when it was parsed
    std::shared_ptr<const Result<UpgradeConfig>> config;  // shared: a read copies no config
  };
  std::string dir_;
  std::map<std::string, std::string> file_clusters_;  // file -> the cluster it named last
  std::map<std::string, Parsed> parsed_;              // file -> what it held at that stat
};

// OCM: for each fleet cluster, its id (from its agent), its remote cluster and policies;
// a cluster with no actionable policy has no config. A failure for one cluster leaves
// that cluster's config as it is. Between two reads `interval` (steady time) passes;
// reads in between repeat the last one.
class OcmConfigSource final : public ConfigSource {
 public:
  using ClusterIdOf = std::function<Result<std::string>(const std::string& cluster)>;
  OcmConfigSource(PolicyService& service, PolicyIndex& index, UpgradeType type, std::vector<std::string> clusters,
                  ClusterIdOf cluster_id, env::Clock& clock, env::Clock::SteadyTime::duration interval)
      : service_(service), index_(index), type_(type), clusters_(std::move(clusters)), cluster_id_(std::move(cluster_id)),
        clock_(clock), interval_(interval) {}
  SourceRead Read() override;

 private:
  SourceRead ReadNow();

  PolicyService& service_;
  PolicyIndex& index_;
  UpgradeType type_;
  std::vector<std::string> clusters_;
  ClusterIdOf cluster_id_;
  env::Clock& clock_;
  env::Clock::SteadyTime::duration interval_;
  std::optional<env::Clock::SteadyTime> next_;
  SourceRead last_;
};

}  // namespace cincinnati::upgrade
