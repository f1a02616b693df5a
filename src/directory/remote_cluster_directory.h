// RemoteClusterDirectory: the cluster directory as an HTTP service.
//
// `GET <base>/clusters/<id>` answers 200 with {"customer": "...", "labels": {...}}
// (both optional), or 404 for an unknown cluster. Answers are cached: found ones for
// `ttl`, unknown ones for `negative_ttl`, in a cache of at most `max_entries` (expired
// entries go first when it is full, then arbitrary ones). Anything else (timeout,
// refused connection, another status, bad JSON) is a failure: it is not cached, and
// for `failure_backoff` afterwards Quick() answers "failed" at once for every uncached
// id, so a dead directory costs requests nothing while it stays dead.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/status.h"
#include "directory/cluster_directory.h"
#include "env/clock.h"

namespace cincinnati::directory {

struct RemoteDirectoryOptions {
  std::string base_url;  // e.g. http://directory.example:8000/api
  std::chrono::milliseconds timeout{500};
  std::chrono::milliseconds ttl{300000};
  std::chrono::milliseconds negative_ttl{60000};
  std::chrono::milliseconds failure_backoff{5000};
  size_t max_entries = 100000;
  env::Clock* clock = &env::RealClock();  // TTLs and the back-off (tests pass a ManualClock)
};

class RemoteClusterDirectory : public ClusterDirectory {
 public:
  explicit RemoteClusterDirectory(RemoteDirectoryOptions options);
  std::string_view kind() const override { return "remote"; }
  std::optional<DirectoryAnswer> Quick(std::string_view id) override;
  DirectoryAnswer Lookup(std::string_view id) override;
  size_t cached() const;

 private:
  using Time = env::Clock::SteadyTime;
  struct Entry {
    DirectoryAnswer answer;
    Time expires;
  };
  void Store(const std::string& id, const DirectoryAnswer& answer, Time now);

  RemoteDirectoryOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> cache_;
  Time down_until_{};
  std::string last_error_;
};

// Reads a directory's answer body ({"customer": ..., "labels": {...}}).
Result<ClusterInfo> ParseClusterInfoJson(const std::string& body);

}  // namespace cincinnati::directory
