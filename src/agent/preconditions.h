// Preconditions of an update, run on every newly loaded payload in the
// cluster-version operator's order and with its words:
//   ClusterVersionRollback      target < current only back to the previous z-stream release
//   ClusterVersionGiantHop      no major increase (4 -> 5.0 excepted), at most one minor
//   ClusterVersionUpgradeable   Upgradeable=False blocks minor and major updates
//   ClusterVersionRecommendedUpdate  a warning when the target is not recommended
// and one more, as our design asks ("payloads declare transitions"):
//   ReleasePrevious             the payload's release-metadata `previous` lists the running
//                               version (not checked for a rollback: the rollback rule decides)
//
// Summarize() words the outcome as the CVO does: one failure's text, or "Multiple
// precondition checks failed:" and a list; with `force`, blocking failures become
// warnings ("Forced through blocking failures: ...").
//
// Plain functions over values; never throw.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/cluster_version.h"
#include "core/semver.h"

namespace cincinnati::agent {

struct PreconditionFailure {
  std::string name;     // "ClusterVersionRollback"
  std::string reason;   // "LowDesiredVersion"
  std::string message;
  bool blocking = true;
};

// `previous`: the payload's release-metadata `previous` list.
std::vector<PreconditionFailure> RunPreconditions(const ClusterVersion& cv, const std::string& target_version,
                                                  const std::vector<Version>& previous);

struct PreconditionSummary {
  bool blocked = false;  // nothing may be applied
  std::string reason = "UpgradePreconditionCheckFailed";
  std::string message;
};
// nullopt when there is no failure at all.
std::optional<PreconditionSummary> Summarize(const std::vector<PreconditionFailure>& failures, bool force);

}  // namespace cincinnati::agent
