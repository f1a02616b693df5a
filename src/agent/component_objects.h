// ComponentObjects: the cluster's component objects (ClusterOperator) and the other
// objects a payload applies, over the agent's object store.
//
// A ClusterOperator has two writers: the agent applies the payload's manifest (creating
// the object when missing and recording the target in the annotation
// `agent.cincinnati.openshift.io/desired-version`, never touching status) and the
// component writes its status through the API. Every read-modify-write happens under
// one mutex, so neither overwrites the other.
//
// Other manifests are kept as `objects/<kind>.<namespace>.<name>` (lower case), read
// back through the API; applying one replaces the object (idempotent).
//
// A component is at level when its status reports every version the manifest's
// `status.versions` lists (else operator = the target version), Available=True and
// not Degraded=True (the cluster-version operator's rule).
//
// Every ClusterOperator written is checked first: at most kMaxComponentBytes as JSON
// (TooLarge naming the object and the limit, the old object kept), and its status in
// the API's schema (conditions: objects with a string type and a status of True, False
// or Unknown; versions: objects with string name and version), InvalidArgument naming
// the field. One object that cannot be read (an older agent's, or one edited by hand)
// never breaks the others: ListAll returns it apart.
//
// Thread-safety: every method may be called from any thread. Errors: Status values.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/manifests.h"
#include "agent/object_store.h"
#include "kube/json_value.h"

namespace cincinnati::agent {

using kube::JsonValue;
using kube::JsonArray;

inline constexpr char kComponentKind[] = "clusteroperators";
inline constexpr char kObjectKind[] = "objects";
inline constexpr char kDesiredVersionAnnotation[] = "agent.cincinnati.openshift.io/desired-version";
// Kubernetes keeps objects under about 1.5 MiB (etcd's request limit); a component's
// status is a few kilobytes.
inline constexpr size_t kMaxComponentBytes = size_t{1} << 20;

struct ComponentList {
  JsonArray objects;                             // readable and valid, by name
  std::vector<std::pair<std::string, Status>> unreadable;     // name, why
};

struct ComponentLevel {
  bool done = false;       // at the target level
  bool degraded = false;   // Degraded=True
  std::string message;     // why not done, for Progressing and Failing
};

class ComponentObjects {
 public:
  explicit ComponentObjects(ObjectStore& store) : store_(store) {}

  Result<std::optional<JsonValue>> Get(const std::string& name);
  ComponentList ListAll();
  Result<JsonValue> Put(const std::string& name, const JsonValue& object);
  Result<JsonValue> PatchStatus(const std::string& name, const JsonValue& patch);

  // Applies one payload manifest for the release `target_version`; for a
  // ClusterOperator, returns its level (other objects are done once stored).
  Result<ComponentLevel> Apply(const Manifest& manifest, const std::string& target_version);

  Result<std::optional<JsonValue>> GetObject(const std::string& name);
  Result<std::vector<std::string>> ListObjects();
  static std::string ObjectName(const Manifest& manifest);

 private:
  ObjectStore& store_;
  std::mutex mu_;
};

// Whether `object` is a ClusterOperator the agent keeps: size and status schema.
Status CheckComponent(const std::string& name, const JsonValue& object);

// The level of a live ClusterOperator against the payload's manifest.
ComponentLevel LevelOf(const JsonValue& live, const JsonValue& manifest, const std::string& target_version);

}  // namespace cincinnati::agent
