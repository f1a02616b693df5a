// The fleet's say before one cluster's upgrade starts, as a pure function of what the
// operator knows: empty when the upgrade may start, else why not (shown to the
// administrator as the cluster's note and `waiting-for` annotation).
//
// In this order:
//  - a pause (fleet.failureThreshold reached, or an administrator's; a pause has a
//    non-empty reason): for every target when it names no version, else only for
//    upgrades to that version;
//  - fleet.maxParallel: at most that many clusters Upgrading at once (0: no cap); the
//    cluster asking is not counted;
//  - fleet.waves: a cluster waits while any cluster of an earlier wave (by the label
//    fleet.waveLabel) has a config that has not finished (Upgraded or Failed); a cluster
//    without the label, or whose label names no wave, goes last.
// Never throws.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "operator/operator_config.h"
#include "operator/upgrade_config.h"

namespace cincinnati::upgrade {

struct FleetPause {
  std::string reason;   // empty: not paused
  std::string version;  // empty: every upgrade is held
};

// The history entry a config's phase is read from (its desired version's, else the newest).
const UpgradeHistory* NewestHistory(const UpgradeConfig& config);
bool IsUpgrading(const UpgradeConfig& config);
bool IsFinished(const UpgradeConfig& config);

using ClusterLabels = std::function<const std::map<std::string, std::string>*(const std::string& cluster)>;

std::string FleetHold(const UpgradeConfig& config, const OperatorConfig& settings, const FleetPause& pause,
                      const std::map<std::string, UpgradeConfig>& configs, const ClusterLabels& labels_of);

}  // namespace cincinnati::upgrade
