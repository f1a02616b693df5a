// What the operator's API shows (operator_api.h): documents built from the configs and
// the fleet's state, apart from the operator that keeps them.
//
//  - UpgradeConfigList: every config as the managed-upgrade operator's UpgradeConfig
//    document, with what its cluster waits for (the last pass's error or note) in the
//    annotation upgrade.cincinnati.openshift.io/waiting-for;
//  - the fleet's status: whether upgrades are paused (and why, and for which version),
//    how many clusters are upgrading, maxParallel and the operator's now; a pause that
//    cannot be read shows as a pause, which is how the operator treats it; and
//    unreadableConfigs (ours): cluster -> why the source could not read its config;
//  - the reference's collector gauges (managed_upgrade_*, names verbatim) computed from
//    the configs, with the cluster's name added (one operator serves a fleet), and
//    upgradeoperator_reconciles_total (ours): the passes each cluster has had, so that a
//    test or an administrator can tell "nothing happened" from "nothing ran".
// Pure functions; never throw.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <optional>
#include <string>

#include "core/status.h"
#include "kube/json_value.h"
#include "operator/fleet_hold.h"
#include "operator/scheduler.h"
#include "operator/upgrade_config.h"

namespace cincinnati::upgrade {

inline constexpr char kWaitingForAnnotation[] = "upgrade.cincinnati.openshift.io/waiting-for";

kube::JsonValue UpgradeConfigList(const std::map<std::string, UpgradeConfig>& configs,
                                  const std::map<std::string, std::string>& waiting_for);
// The item of `list` whose metadata.labels.cluster is `cluster`.
std::optional<kube::JsonValue> FindUpgradeConfig(const kube::JsonValue& list, const std::string& cluster);

// The fleet's state: its pause, how many upgrade, and the UpgradeConfigs the operator
// cannot act on: "unreadableConfigs" (cluster -> why) and "unknownClusters" (clusters an
// UpgradeConfig names that the fleet file does not list).
kube::JsonValue FleetStatusDocument(const Result<FleetPause>& pause, int upgrading, int max_parallel, TimePoint now,
                                    const std::map<std::string, std::string>& unreadable_configs = {},
                                    const std::set<std::string>& unknown_clusters = {});

std::string CollectorMetrics(const std::map<std::string, UpgradeConfig>& configs,
                             const std::map<std::string, uint64_t>& passes);

// How the operator keeps up (ours): per cluster, its last pass's duration
// (upgradeoperator_pass_duration_seconds) and when it ended
// (upgradeoperator_last_reconcile_timestamp_seconds), the clusters per phase
// (upgradeoperator_clusters{phase}: the newest history entry's, "New" without one), and
// the passes queued or running (upgradeoperator_passes_in_flight).
struct PassStats {
  double last_pass_seconds = 0;
  double last_reconciled = 0;  // Unix seconds; 0: no pass yet (not shown)
  bool in_flight = false;
};
std::string PassMetrics(const std::map<std::string, UpgradeConfig>& configs, const std::map<std::string, PassStats>& passes);
// Configs per phase of their newest history entry ("New" without one; every phase listed).
std::map<std::string, int> ClustersPerPhase(const std::map<std::string, UpgradeConfig>& configs);

}  // namespace cincinnati::upgrade
