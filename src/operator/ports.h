// The upgrade operator's view of the outside world (what the MUO takes from the cluster):
// one small interface per dependency, so that the steps are pure functions of their
// inputs and tests can use real parts (our agent, Prometheus, Alertmanager, a webhook
// receiver) or swap one. Each call is one bounded network exchange; none throws; an
// unreachable or misbehaving peer is a Status naming it.
//
// Implementations must be safe to call from several threads at once (the operator
// reconciles different clusters in parallel; one cluster is never reconciled twice at
// the same time).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace cincinnati::upgrade {

// ---- the cluster's update agent (ClusterVersion, ClusterOperators) ----
struct AgentRelease {
  std::string version;
  std::string image;
};
struct AgentHistoryEntry {
  std::string state;  // "Partial", "Completed"
  std::string version;
  std::string image;
  std::string started_time;
  std::string completion_time;
};
struct AgentCondition {
  std::string status;  // "" when the condition is absent
  std::string reason;
  std::string message;
};
struct ComponentHealth {
  std::string name;
  bool available = false;
  bool degraded = false;
};
struct WorkerPool {
  bool found = false;  // a component reports a pool (machineCount in its status extension)
  std::string component;
  int64_t machine_count = 0;
  int64_t updated_machine_count = 0;
  bool updating() const { return found && machine_count != updated_machine_count; }
};
struct AgentSnapshot {
  int64_t resource_version = -1;  // metadata.resourceVersion (-1: not read)
  std::string cluster_id;
  std::string channel;
  std::string upstream;
  AgentRelease desired_update;  // spec.desiredUpdate (empty when unset)
  AgentRelease status_desired;  // status.desired
  std::vector<AgentHistoryEntry> history;  // newest first
  std::vector<AgentRelease> available_updates;
  std::vector<AgentRelease> conditional_updates;
  AgentCondition upgradeable;
  AgentCondition failing;
  AgentCondition progressing;
  std::vector<ComponentHealth> components;
  WorkerPool worker_pool;
};

class UpdateAgent {
 public:
  virtual ~UpdateAgent() = default;
  virtual Result<AgentSnapshot> Snapshot() = 0;
  virtual Status SetChannel(const std::string& channel) = 0;
  // merge-patch of spec.desiredUpdate: {version, image} (an empty one is written as null).
  virtual Status SetDesiredUpdate(const std::string& version, const std::string& image) = 0;
  // Watches the ClusterVersion outside any pass: `done(true)` once its resourceVersion
  // is not `seen`, `done(false)` when the watch ended without a change (its timeout, an
  // error, an agent that cannot watch). Returns false, and never calls `done`, when the
  // port cannot watch at all (then the operator polls at its interval).
  virtual bool Watch(int64_t seen, std::chrono::seconds timeout, std::function<void(bool changed)> done) { return false; }
};

// ---- alerts (Prometheus ALERTS) ----
struct FiringAlert {
  std::string name;
  std::string severity;
  std::string namespace_;
  std::map<std::string, std::string> labels;  // every label of the series
};
class AlertSource {
 public:
  virtual ~AlertSource() = default;
  // Firing alerts with severity "critical" (the caller filters by namespace and ignore lists).
  virtual Result<std::vector<FiringAlert>> FiringCriticalAlerts() = 0;
};

// ---- maintenance windows (Alertmanager v2 silences) ----
struct SilenceMatcher {
  std::string name;
  std::string value;
  bool is_regex = false;
  bool is_equal = true;
  bool operator==(const SilenceMatcher&) const = default;
};
struct Silence {
  std::string id;  // empty when creating
  std::vector<SilenceMatcher> matchers;
  std::string starts_at;  // RFC 3339
  std::string ends_at;
  std::string created_by;
  std::string comment;
  std::string state;  // "active", "pending", "expired" (read only)
};
class MaintenanceWindows {
 public:
  virtual ~MaintenanceWindows() = default;
  virtual Result<std::vector<Silence>> List() = 0;
  virtual Result<std::string> Create(const Silence& silence) = 0;  // the new id
  virtual Status Expire(const std::string& id) = 0;
};

// ---- notifications (webhooks) ----
struct Notification {
  std::string id;       // "<cluster>/<version>/<event>": stable, for receivers that deduplicate
  std::string cluster;
  std::string event;    // "started", "delayed", "completed", "failed", ... (notifier.h)
  std::string version;
  std::string description;
  std::string time;     // RFC 3339
};
class Notifier {
 public:
  virtual ~Notifier() = default;
  virtual Status Send(const Notification& notification) = 0;
};

// ---- hooks (capacity reservation, drain remediation: the Kubernetes-only parts) ----
struct HookResult {
  int exit_code = -1;  // -1: did not finish (timeout, could not start)
  std::string output;  // the last lines of stdout and stderr
};
class HookRunner {
 public:
  virtual ~HookRunner() = default;
  virtual HookResult Run(const std::string& command, const std::map<std::string, std::string>& env,
                         std::chrono::seconds timeout) = 0;
  // Ends every hook running now (a leadership term ended: no hook outlives it); how many.
  virtual int KillRunning() { return 0; }
};

}  // namespace cincinnati::upgrade

namespace cincinnati::upgrade {

// ---- release images (the version a pull spec by digest carries) ----
class ReleaseResolver {
 public:
  virtual ~ReleaseResolver() = default;
  virtual Result<std::string> VersionOf(const std::string& image) = 0;
};

}  // namespace cincinnati::upgrade

namespace cincinnati::upgrade {

// ---- the update service (the MUO's Cincinnati query when a channel change is validated) ----
class GraphClient {
 public:
  virtual ~GraphClient() = default;
  // The versions offered (recommended or conditional) from `version` in `channel`, as the
  // agent with this snapshot would ask for them (its upstream, cluster id, arch).
  virtual Result<std::vector<std::string>> Targets(const AgentSnapshot& agent, const std::string& channel,
                                                   const std::string& version) = 0;
};

}  // namespace cincinnati::upgrade
