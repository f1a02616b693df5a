// OperatorConfig: the upgrade operator's settings file (YAML), the managed-upgrade
// operator's `config.yaml` keys verbatim plus our own
// sections for what the MUO takes from the cluster (Prometheus, Alertmanager, webhooks,
// hooks, the fleet). Unlike the MUO, absent keys take the documented defaults (the values
// of the MUO's own deployment), and unknown keys are errors (a typo must not silently
// turn a safety check off).
//
// Fleet: the clusters the operator manages, from a fleet file (name, agent URL, token
// file, labels): operator/fleet_file.h, which states what it costs.
//
// Plain data; parsing is total: errors name the file and the key.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/status.h"
#include "operator/fleet_file.h"
#include "operator/upgrade_config.h"

namespace cincinnati::upgrade {

struct Endpoint {
  std::string url;  // empty: not configured
  std::string token_file;
  std::string ca_dir;
  // One Prometheus or Alertmanager for a fleet: alerts with this label belong to the
  // cluster it names (others to every cluster), and silences get a matcher on it.
  std::string cluster_label;
};

struct WebhookConfig {
  std::string url;
  std::string token_file;
  std::vector<std::string> headers;  // "Name: value"
};

struct OperatorConfig {
  // configManager
  std::string source = "LOCAL";  // LOCAL | OCM
  std::string local_config_dir;  // LOCAL: a directory of UpgradeConfig YAML files, one per cluster
  std::string ocm_base_url;      // OCM: the upgrade-policy service
  std::string ocm_token_file;    // OCM: a bearer token for it
  int watch_interval_minutes = 60;
  // upgradeType: the type given to configs made from remote policies
  UpgradeType upgrade_type = UpgradeType::kOSD;
  // maintenance
  int control_plane_minutes = 90;
  std::vector<std::string> control_plane_criticals;
  // upgradeWindow
  int delay_trigger_minutes = 30;
  int upgrade_window_minutes = 120;
  // nodeDrain
  int node_drain_timeout_minutes = 45;
  int expected_node_drain_minutes = 8;
  // healthCheck
  std::vector<std::string> ignored_criticals;
  std::vector<std::string> ignored_namespaces;
  // extDependencyAvailabilityChecks.http
  std::vector<std::string> dependency_urls;
  int dependency_timeout_seconds = 15;
  // validation.cincinnati: a channel change is checked against the update service
  bool cincinnati_check = false;
  // featureGate.enabled
  bool pre_health_check_gate = false;
  // scale
  int scale_timeout_minutes = 30;

  // ours
  Endpoint prometheus;
  Endpoint alertmanager;
  std::vector<WebhookConfig> webhooks;
  std::string capacity_hook;       // EnsureExtraUpgradeWorkers: exit 0 done, 1 not yet, else error
  std::string capacity_removal_hook;
  std::string drain_hook;          // run while workers update (NodeKeeper's remediation)
  int hook_timeout_seconds = 300;
  // fleet
  int max_parallel = 0;            // clusters upgrading at once; 0: no cap
  std::string wave_label;          // e.g. "wave"
  std::vector<std::string> waves;  // label values in order, e.g. [canary, main]
  int failure_threshold = 0;       // failed upgrades of a target that pause the rest; 0: never
};

// What the operator reads from files is bounded: a settings file of at most 1 MiB, a
// fleet file of at most 256 MiB (kMaxFleetFileBytes in fleet_file.h: about 1,700,000
// clusters of ~150 bytes, read in the file's size plus ~510 bytes a cluster), an
// UpgradeConfig of at most 1 MiB. Larger files are refused with a message naming both
// sizes, before they are read.
inline constexpr size_t kMaxSettingsFileBytes = size_t{1} << 20;
inline constexpr size_t kMaxUpgradeConfigFileBytes = size_t{1} << 20;

Result<OperatorConfig> ParseOperatorConfig(const std::string& yaml, const std::string& what);
Result<OperatorConfig> LoadOperatorConfig(const std::string& path);

}  // namespace cincinnati::upgrade
