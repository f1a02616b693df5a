// DesiredUpdate: what the administrator asks for in spec.desiredUpdate, checked and
// resolved the way the cluster-version operator does.
//
//   - DesiredUpdateErrors: the spec's field errors that make ClusterVersion Invalid:
//     a version without an image must name exactly one available update (or a version
//     of the history); several images for one version need the exact image.
//   - ResolveDesiredUpdate: the release to move to. By version: the available update
//     (or history entry) of that version. By image: the image as given, its version
//     from the available or conditional updates when listed there, else the spec's.
//     Whether the target is recommended (available, or a conditional update whose
//     Recommended is True) and, if not, why: the CVO only warns, `oc adm upgrade`
//     refuses unless told otherwise.
//   - UpgradeableCondition: Upgradeable=False from the components whose own
//     Upgradeable condition is False, with the operator's reasons and messages; none
//     when every component allows minor updates.
// Pure functions; never throw.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/cluster_version.h"

namespace cincinnati::agent {

std::vector<std::string> DesiredUpdateErrors(const ClusterVersion& cv);

struct ResolvedTarget {
  Release release;
  bool recommended = false;
  std::string not_recommended_reason;  // the Recommended reason, or UnknownUpdate
  std::string not_recommended_message;
};

// nullopt when nothing is desired, or when the desired release is the current one.
std::optional<ResolvedTarget> ResolveDesiredUpdate(const ClusterVersion& cv);

struct ComponentUpgradeable {
  std::string name;
  Condition upgradeable;  // the component's Upgradeable condition
};
std::optional<Condition> UpgradeableCondition(const std::vector<ComponentUpgradeable>& components,
                                              const std::string& now);

}  // namespace cincinnati::agent
