// Component: a second-level operator for the embedded setup (`cincinnati component`).
// It owns one ClusterOperator in the agent's API and plays what an OpenShift operator
// does during an update: when the agent asks for a new version (the annotation
// `agent.cincinnati.openshift.io/desired-version`, written when the payload's manifest
// is applied), it rolls out and then reports the version, Available=True,
// Degraded=False.
//
// The rollout runs the manifest's `component.cincinnati.openshift.io/rollout-command`
// (through /bin/sh, with CINCINNATI_VERSION set; a non-zero exit is Degraded), or
// waits `component.cincinnati.openshift.io/rollout-seconds` (else --rollout-seconds).
// With `machines` > 0 it plays the machine-config role: a worker pool updated machine
// by machine, reported as status.extension {machineCount, updatedMachineCount}.
// `fail` reports Degraded=True instead of finishing; `hang` never finishes.
//
// Thread-safety: one thread runs it. Errors (the agent is down, a bad answer) are
// logged and retried at the next interval; nothing throws.
#pragma once

#include <chrono>
#include <stop_token>
#include <string>

#include "core/status.h"
#include "env/clock.h"
#include "kube/json_value.h"

namespace cincinnati::component {

using kube::JsonValue;

inline constexpr char kRolloutCommandAnnotation[] = "component.cincinnati.openshift.io/rollout-command";
inline constexpr char kRolloutSecondsAnnotation[] = "component.cincinnati.openshift.io/rollout-seconds";

struct ComponentOptions {
  std::string name;
  std::string agent_url;  // http://127.0.0.1:9099
  std::string token;      // bearer token, when the agent needs one
  std::string initial_version;  // reported when the object is created (the running release)
  double rollout_seconds = 0;
  int machines = 0;       // > 0: the machine-config role
  bool fail = false;
  bool hang = false;
  std::chrono::milliseconds interval{250};
  const env::Clock* clock = &env::RealClock();  // lastTransitionTime, and how long a rollout lasts
};

class Component {
 public:
  explicit Component(ComponentOptions options) : options_(std::move(options)) {}
  // One reconciliation: create the object when missing; roll out when asked.
  Status Reconcile(std::stop_token stop = {});
  void Run(std::stop_token stop);

 private:
  Result<JsonValue> Fetch();
  Status PatchStatus(const JsonValue& status);
  Status RollOut(const JsonValue& object, const std::string& version, std::stop_token stop);
  JsonValue DoneStatus(const std::string& version) const;
  std::string Url() const;

  ComponentOptions options_;
  // The version whose rollout began here last: when the report that it began was lost
  // (the agent was away), the rollout goes on and is reported again, not begun again.
  std::string started_;
  // The version rolled out here last: when reporting it failed (the agent was away),
  // it is reported again, not rolled out again.
  std::string finished_;
};

}  // namespace cincinnati::component
