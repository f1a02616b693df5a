// ClusterDatabase: the embedded cluster directory, a SQLite file with one table
//   clusters(id TEXT PRIMARY KEY, customer TEXT NOT NULL, labels TEXT NOT NULL)
// where labels is a JSON object of strings. `cincinnati clusters` writes it
// (ClusterDatabase); the policy engine reads it (SqliteClusterDirectory), opened
// read-only with one connection per worker slot, answers cached until the file
// changes. Every committed change shows at the next lookup; a file replaced by a new
// one (a rename over it) is reopened. Ids are stored normalized (lower case).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "directory/cluster_directory.h"

namespace cincinnati::sqlite {
class Database;
}

namespace cincinnati::directory {

struct ClusterRecord {
  std::string id;
  ClusterInfo cluster;
  bool operator==(const ClusterRecord&) const = default;
};

class ClusterDatabase {
 public:
  // Opens (creating the file and table when `create`) for writing.
  static Result<std::unique_ptr<ClusterDatabase>> Open(const std::string& path, bool create);
  ~ClusterDatabase();

  enum class PutMode { kInsert, kUpdate, kUpsert };  // insert: must not exist; update: must exist
  Status Put(const ClusterRecord& record, PutMode mode);
  Status Remove(const std::string& id);  // NotFound when absent
  Result<std::vector<ClusterRecord>> List(const std::string& customer_filter = "") const;
  Result<std::optional<ClusterRecord>> Get(const std::string& id) const;
  // Replaces or adds every record in one transaction (all or nothing).
  Status Import(const std::vector<ClusterRecord>& records, bool replace_all);

 private:
  ClusterDatabase(std::unique_ptr<sqlite::Database> db, std::string path);
  // Rows matching `where` (" WHERE col = ?" bound to `value`, or "" for all), by id.
  Result<std::vector<ClusterRecord>> Select(const char* where, const std::string& value) const;
  std::unique_ptr<sqlite::Database> db_;
  std::string path_;
};

// Record checks shared by every writer: a non-empty id without blanks, a customer and
// label keys/values that hotfix rules can name (core/hotfix_rule.h).
Status ValidateClusterRecord(const ClusterRecord& record);

// "customer,labels" files: CSV with a header line `id,customer,labels` and labels as
// `key=value;key=value`; JSON: [{"id":..., "customer":..., "labels":{...}}, ...].
Result<std::vector<ClusterRecord>> ParseClusterCsv(const std::string& text);
Result<std::vector<ClusterRecord>> ParseClusterJson(const std::string& text);
std::string WriteClusterCsv(const std::vector<ClusterRecord>& records);
std::string WriteClusterJson(const std::vector<ClusterRecord>& records);

class SqliteClusterDirectory : public ClusterDirectory {
 public:
  explicit SqliteClusterDirectory(std::string path, size_t connections = 16, size_t max_cached = 100000);
  ~SqliteClusterDirectory() override;
  std::string_view kind() const override { return "embedded"; }
  std::optional<DirectoryAnswer> Quick(std::string_view id) override { return Lookup(id); }
  DirectoryAnswer Lookup(std::string_view id) override;

 private:
  struct Connection;
  // The file's identity and last change, from one stat() per lookup: answers are
  // cached until it changes (every commit of a rollback-journal database, which is
  // what `cincinnati clusters` writes, changes size or mtime).
  struct Signature {
    uint64_t inode = 0, size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const Signature&) const = default;
  };
  DirectoryAnswer Query(const std::string& id);

  std::string path_;
  size_t max_cached_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::atomic<uint64_t> generation_{0};  // bumped when the file was replaced: reopen
  std::shared_mutex mu_;
  Signature signature_;                  // under mu_
  std::unordered_map<std::string, DirectoryAnswer> cache_;  // under mu_
};

}  // namespace cincinnati::directory
