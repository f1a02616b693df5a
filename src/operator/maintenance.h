// Maintenance windows of an upgrade (as the MUO makes them): Alertmanager
// silences created by "managed-upgrade-operator" for the control plane (default
// matchers, plus the ignored critical alerts) and the workers (re-sized as machines
// finish), found again by their comment, so that creating one is idempotent across
// passes and restarts, and expired when the window ends.
//
// When one Alertmanager serves a fleet (`alertmanager.clusterLabel`), each silence also
// matches that label to the cluster and its comment names the cluster.
//
// Functions over the MaintenanceWindows port; never throw.
#pragma once

#include <chrono>
#include <string>

#include "operator/operator_config.h"
#include "operator/ports.h"
#include "operator/scheduler.h"

namespace cincinnati::upgrade {

inline constexpr std::string_view kSilenceCreator = "managed-upgrade-operator";

struct WindowTarget {
  std::string cluster;
  std::string version;
};

// Both control-plane silences exist (in any state: one expired by
// RemoveControlPlaneWindow is not made again), else they are created for `length` from
// `now` (maintenance.controlPlaneTime; wall-clock times: Alertmanager runs on real time).
Status EnsureControlPlaneWindow(MaintenanceWindows& windows, const OperatorConfig& config, const WindowTarget& target, TimePoint now,
                                std::chrono::seconds length);
// Expires the active silences of this cluster whose comment contains `kind`
// ("OSD control plane" or "OSD worker node") for this version.
Status RemoveWindows(MaintenanceWindows& windows, const OperatorConfig& config, const WindowTarget& target, std::string_view kind);
// The worker silence for `pending` machines lasting `length`: kept when one with the same
// comment exists, else the active one for fewer/more machines is replaced.
Status EnsureWorkerWindow(MaintenanceWindows& windows, const OperatorConfig& config, const WindowTarget& target, int64_t pending,
                          std::chrono::seconds length, TimePoint now);
// Any active silence of ours for this cluster.
Result<bool> MaintenanceActive(MaintenanceWindows& windows, const OperatorConfig& config, const WindowTarget& target);

}  // namespace cincinnati::upgrade
