// AdmUpgrade: what `cincinnati adm upgrade` decides and prints, with the behaviour and
// output of `oc adm upgrade` (and `oc adm upgrade channel`), computed from a
// ClusterVersion: the status report, --to / --to-image / --to-latest / --to-multi-arch /
// --clear with their client-side guards, and the channel change. The caller fetches the
// ClusterVersion from the agent's API, sends the merge patch when there is one, and
// prints. Pure functions; never throw.
#pragma once

#include <optional>
#include <string>

#include "config_api/cluster_version.h"

namespace cincinnati::adm {

using config_api::ClusterVersion;

struct UpgradeOptions {
  std::string to{};
  std::string to_image{};
  bool to_latest = false;
  bool to_multi_arch = false;
  bool clear = false;
  bool force = false;
  bool allow_explicit_upgrade = false;
  bool allow_upgrade_with_warnings = false;
  bool include_not_recommended = false;
  bool allow_not_recommended = false;
};

struct UpgradeOutcome {
  std::string out;                    // standard output
  std::string err;                    // warnings, to standard error
  std::optional<std::string> patch;   // a JSON merge patch of the ClusterVersion to send
  std::string after_patch;            // printed once the patch was accepted
  std::string error;                  // non-empty: fail with "error: <error>"
};

// The flag checks oc makes before talking to the cluster.
std::string CheckUpgradeOptions(const UpgradeOptions& options);

UpgradeOutcome PlanUpgrade(const ClusterVersion& cv, const UpgradeOptions& options);

struct ChannelOptions {
  std::string channel;
  bool allow_explicit_channel = false;
};
UpgradeOutcome PlanChannelChange(const ClusterVersion& cv, const ChannelOptions& options);

}  // namespace cincinnati::adm
