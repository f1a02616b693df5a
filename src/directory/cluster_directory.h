// ClusterDirectory: who owns a cluster (customer and labels), by cluster id; the
// policy engine's "Tollbooth". Two implementations: a SQLite file managed with
// `cincinnati clusters` (cluster_database.h, the default) and an HTTP lookup service
// (remote_cluster_directory.h).
//
// The policy engine calls Quick() on its I/O threads: it answers when that needs no
// waiting (a local file, a cached answer, a directory known to be down) and returns
// nullopt otherwise; then Lookup() runs on a worker thread and waits at most the
// directory's timeout. A failed lookup is never the request's failure: the caller
// serves the general graph. Ids are compared in lower case. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/cluster.h"

namespace cincinnati::directory {

struct DirectoryAnswer {
  enum class Kind { kFound, kUnknown, kFailed };
  Kind kind = Kind::kUnknown;
  ClusterInfo cluster;     // when found
  std::string error;       // when failed: why
  bool from_cache = false;

  static DirectoryAnswer Found(ClusterInfo c) { return {Kind::kFound, std::move(c), {}, false}; }
  static DirectoryAnswer Unknown() { return {}; }
  static DirectoryAnswer Failed(std::string why) { return {Kind::kFailed, {}, std::move(why), false}; }
};

class ClusterDirectory {
 public:
  virtual ~ClusterDirectory() = default;
  virtual std::string_view kind() const = 0;  // "embedded" or "remote"
  virtual std::optional<DirectoryAnswer> Quick(std::string_view id) = 0;
  virtual DirectoryAnswer Lookup(std::string_view id) = 0;
};

// The id as stored and looked up: lower case, surrounding blanks removed.
std::string NormalizeClusterId(std::string_view id);

}  // namespace cincinnati::directory
