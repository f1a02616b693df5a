// ObjectStore: where the agent keeps its API objects (the ClusterVersion, the
// components' ClusterOperators), each a JSON document named by kind and name. An
// interface, so that a Kubernetes API server could later be the store; today there is
// FileObjectStore.
//
// FileObjectStore keeps <dir>/<kind>/<name>.json. Put writes a temporary file in the
// same directory, fsyncs it, renames it over the old one and fsyncs the directory:
// after Put returns the document survives a crash, and a crash at any moment leaves
// either the old or the new document, never a mix (leftover temporary files are
// ignored and removed by the next Put). Delete unlinks and then fsyncs the directory,
// so a removal survives a crash too. Names are DNS-1123 subdomains (lower-case
// letters, digits, '-', '.'), so a name can never leave the directory. Thread-safe
// (one mutex). A document that cannot be read back is an error naming the file.
//
// Limits: Put refuses a document whose JSON is over kMaxObjectBytes (TooLarge), and
// Get reads documents up to the same size, so whatever Put accepted reads back. A file
// over it (written by hand, or by an older agent) is TooLarge on Get; the caller
// decides what to salvage. Writes go through an env::FileSystem: a full disk is a
// NoSpace error and leaves the previous document in place.
#pragma once

#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "env/clock.h"
#include "env/file_system.h"
#include "kube/json_value.h"

namespace cincinnati::agent {

using kube::JsonValue;

inline constexpr size_t kMaxObjectBytes = size_t{16} << 20;

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;
  // nullopt when there is no such object.
  virtual Result<std::optional<JsonValue>> Get(const std::string& kind, const std::string& name) = 0;
  virtual Status Put(const std::string& kind, const std::string& name, const JsonValue& object) = 0;
  virtual Result<std::vector<std::string>> List(const std::string& kind) = 0;  // sorted names
  // Removes a document for good (FileObjectStore: unlink, then fsync of the directory,
  // so the removal survives a crash). No such document is not an error.
  virtual Status Delete(const std::string& kind, const std::string& name) = 0;
  // Moves an unreadable document out of the way, keeping its bytes for a person to read
  // (FileObjectStore: "<name>.json.unreadable-<unix seconds>", never over an earlier
  // one); returns where it went.
  virtual Result<std::string> SetAside(const std::string& kind, const std::string& name) = 0;
  // Where a document lives, for messages and for salvaging what Get refuses.
  virtual std::string Location(const std::string& kind, const std::string& name) const = 0;
};

class FileObjectStore : public ObjectStore {
 public:
  // `clock`: the time in the names of set-aside documents.
  explicit FileObjectStore(std::filesystem::path dir, env::FileSystem& fs = env::DefaultFileSystem(),
                           const env::Clock& clock = env::RealClock())
      : dir_(std::move(dir)), fs_(fs), clock_(clock) {}
  Result<std::optional<JsonValue>> Get(const std::string& kind, const std::string& name) override;
  Status Put(const std::string& kind, const std::string& name, const JsonValue& object) override;
  Result<std::vector<std::string>> List(const std::string& kind) override;
  Status Delete(const std::string& kind, const std::string& name) override;
  Result<std::string> SetAside(const std::string& kind, const std::string& name) override;
  std::string Location(const std::string& kind, const std::string& name) const override;

 private:
  std::filesystem::path dir_;
  env::FileSystem& fs_;
  const env::Clock& clock_;
  std::mutex mu_;
};

// Whether `name` is a DNS-1123 subdomain (at most 253 characters).
bool IsObjectName(std::string_view name);

}  // namespace cincinnati::agent
