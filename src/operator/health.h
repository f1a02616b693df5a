// Health checks of a cluster before and after its upgrade, as the MUO's: critical alerts
// firing in the platform's namespaces (minus the ignore lists) and components that are
// Degraded or not Available. Each check writes
// upgradeoperator_healthcheck_failed{upgradeconfig_name,state,version,reason}.
//
// Pure functions over the ports; never throw.
#pragma once

#include <string>
#include <vector>

#include "operator/operator_config.h"
#include "operator/operator_metrics.h"
#include "operator/ports.h"

namespace cincinnati::upgrade {

// Alert names (sorted, unique) that count against `cluster` (namespaces ^openshift.*,
// ^kube-.* or ^default$, the ignore lists, and the cluster label when one is configured).
std::vector<std::string> CountedCriticalAlerts(const std::vector<FiringAlert>& alerts, const OperatorConfig& config,
                                               const std::string& cluster);
// Components with Degraded=True or Available=False.
std::vector<std::string> UnhealthyComponents(const AgentSnapshot& agent);

struct HealthLabels {
  std::string cluster;
  std::string state;    // the history phase
  std::string version;  // the current version, or "unknown"
};

// Both checks in order; the first failure is the error ("critical alert(s) firing: a, b"
// or "degraded operators: x, y"). A missing AlertSource skips the alert check.
Status CheckClusterHealth(AlertSource* alerts, const AgentSnapshot& agent, const OperatorConfig& config,
                          GaugeTable& metrics, const HealthLabels& labels);

}  // namespace cincinnati::upgrade
