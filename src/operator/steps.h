// The steps of an upgrade (the MUO's OSD and ARO upgraders): the OSD list of 17
// and the ARO list of 14, by the reference's names and condition types, each an
// idempotent function of a StepContext (the config, the agent's snapshot taken at the
// start of the pass, the ports, the clock). Steps that only make sense before the update
// is commanded are done at once when it has commenced. No step waits on a peer other
// than the cluster's agent: every other call runs outside the pass (pending_calls.h),
// the step answering "not done yet" until it has finished.
//
// Where we differ from the reference (its known quirks): UpgradeDelayedCheck has its own
// condition type; the timestamp gauges (upgrade, control plane and worker starts and ends) are
// recorded once per version; capacity and
// drain are hook commands (the Kubernetes parts are not built); PostUpgradeProcedures
// (FedRAMP file integrity) is Kubernetes-only and always done.
#pragma once

#include <string>
#include <vector>

#include "operator/notifications.h"
#include "operator/operator_config.h"
#include "operator/operator_metrics.h"
#include "operator/pending_calls.h"
#include "operator/ports.h"
#include "operator/step_runner.h"
#include "operator/upgrade_config.h"

namespace cincinnati::upgrade {

struct StepContext {
  UpgradeConfig& config;
  UpgradeHistory& history;
  const OperatorConfig& settings;
  const AgentSnapshot& agent;
  UpdateAgent& agent_port;
  AlertSource* alerts;          // null: no Prometheus configured
  MaintenanceWindows* windows;  // null: no Alertmanager configured (windows are skipped)
  NotificationCenter& notifications;
  HookRunner* hooks;
  GaugeTable& metrics;
  TimePoint now;             // the operator's clock (scaled in demonstrations)
  TimePoint wall_now;        // real time, for Alertmanager
  double time_scale = 1.0;   // operator seconds per real second
  PendingCalls& calls;       // hooks, probes, webhooks, Prometheus, Alertmanager: outside the pass
};

using UpgradeStep = Step<StepContext>;

std::vector<UpgradeStep> OsdSteps();
std::vector<UpgradeStep> AroSteps();
const std::vector<UpgradeStep>& StepsFor(UpgradeType type);

// The OSD start-window gate, checked before the steps on every pass: not commenced,
// started, and past startTime + upgradeWindow.timeOut.
bool StartWindowExpired(const StepContext& context);
// The failure path of a breached OSD start window: returns the phase to store (kFailed,
// or the current one when a part of it failed, `error`, and must be retried, or still
// runs outside the pass, `waiting`).
Phase RunFailurePath(StepContext& context, std::string* error, std::string* waiting = nullptr);

}  // namespace cincinnati::upgrade
