// ObjectStore: where the agent keeps its API objects (the ClusterVersion, the
// components' ClusterOperators), each a JSON document named by kind and name. An
// interface, so that a Kubernetes API server could later be the store; today there is
// FileObjectStore.
//
// FileObjectStore keeps <dir>/<kind>/<name>.json. Put writes a temporary file in the
// same directory, fsyncs it, renames it over the old one and fsyncs the directory:
// after Put returns the document survives a crash, and a crash at any moment leaves
// either the old or the new document, never a mix (leftover temporary files are
// ignored and removed by the next Put). Names are DNS-1123 subdomains (lower-case
// letters, digits, '-', '.'), so a name can never leave the directory. Thread-safe
// (one mutex). A document that cannot be read back is an error naming the file.
#pragma once

#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/json_value.h"
#include "core/status.h"

namespace cincinnati::agent {

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;
  // nullopt when there is no such object.
  virtual Result<std::optional<JsonValue>> Get(const std::string& kind, const std::string& name) = 0;
  virtual Status Put(const std::string& kind, const std::string& name, const JsonValue& object) = 0;
  virtual Result<std::vector<std::string>> List(const std::string& kind) = 0;  // sorted names
};

class FileObjectStore : public ObjectStore {
 public:
  explicit FileObjectStore(std::filesystem::path dir) : dir_(std::move(dir)) {}
  Result<std::optional<JsonValue>> Get(const std::string& kind, const std::string& name) override;
  Status Put(const std::string& kind, const std::string& name, const JsonValue& object) override;
  Result<std::vector<std::string>> List(const std::string& kind) override;

 private:
  std::filesystem::path dir_;
  std::mutex mu_;
};

// Whether `name` is a DNS-1123 subdomain (at most 253 characters).
bool IsObjectName(std::string_view name);

// Writes `bytes` to `path` so that a crash leaves the old or the new content: a
// temporary file beside it, fsync, rename, fsync of the directory.
Status WriteFileDurably(const std::filesystem::path& path, std::string_view bytes);

}  // namespace cincinnati::agent
