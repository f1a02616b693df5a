// One reconcile pass of one cluster's UpgradeConfig (the MUO's UpgradeConfig controller):
// the phase machine
//   New -> Pending                       (an early health notice when the start is far)
//   Pending -> (valid, upgradeAt reached, fleet allows) -> Upgrading
//   Pending -> (upgradeAt + window passed)  -> Failed   (we honour `breached`; the MUO does not)
//   Upgrading -> (steps all done) -> Upgraded;  (OSD, not commanded within the window) -> Failed
// with the steps of steps.h. Each phase change goes through UpgradeHistory::MoveTo
// (upgrade_config.h has the table): a refused move ends the pass with its error. The caller persists the config after every pass and
// requeues after `requeue` (operator time); an error asks for backoff.
//
// Pure over its inputs (ports, clock); waits on no peer but the cluster's agent (the
// other calls run outside the pass: pending_calls.h); never throws; not thread-safe for
// one config.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "operator/notifications.h"
#include "operator/operator_config.h"
#include "operator/operator_metrics.h"
#include "operator/pending_calls.h"
#include "operator/ports.h"
#include "operator/upgrade_config.h"
#include "operator/validation.h"

namespace cincinnati::upgrade {

struct ClusterPorts {
  UpdateAgent* agent = nullptr;  // required
  AlertSource* alerts = nullptr;
  MaintenanceWindows* windows = nullptr;
  ReleaseResolver* resolver = nullptr;
  GraphClient* graph = nullptr;
  HookRunner* hooks = nullptr;
  PendingCalls* calls = nullptr;  // the cluster's calls outside its passes; null: every call runs inline
};

struct PassContext {
  const OperatorConfig& settings;
  NotificationCenter& notifications;
  GaugeTable& metrics;
  TimePoint now;
  TimePoint wall_now;
  double time_scale = 1.0;
  std::chrono::seconds interval{60};  // requeue while New or Upgrading (the reference: 1 min)
  // The fleet's say before an upgrade starts: empty when it may, else why not.
  std::function<std::string(const UpgradeConfig&)> hold;
};

struct PassResult {
  std::chrono::seconds requeue{300};
  Status error = Status::OK();
  std::string note;  // what the pass is waiting for (the step, the fleet, the time)
  // The pass waits for the agent's ClusterVersion to change (its control plane is
  // updating): the operator may watch it from `agent_resource_version` on.
  bool waits_on_agent = false;
  int64_t agent_resource_version = -1;
  // The pass ended at once because the agent could not be read (a connection or HTTP
  // error, not a malformed answer): the operator may hide it while it is transient.
  bool agent_unreachable = false;
};

PassResult ReconcileOnce(UpgradeConfig& config, const ClusterPorts& ports, PassContext& context);

}  // namespace cincinnati::upgrade
