#include "agent/preconditions.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace cincinnati::agent {
namespace {

// Versions print as Go's semver does (no leading "v", build kept).
std::string Text(const Version& v) { return v.ToString(); }

std::optional<PreconditionFailure> Rollback(const ClusterVersion& cv, const Version& current, const Version& target) {
  const char* name = "ClusterVersionRollback";
  if (target.Compare(current) >= 0) return std::nullopt;
  // The most recent history entry that is not the current release.
  for (const auto& entry : cv.status.history) {
    if (entry.version == current.ToString() && entry.image == cv.status.desired.image) continue;
    auto previous = Version::Parse(entry.version);
    if (!previous.ok()) break;  // logged by the CVO; treated as no previous version
    if (target.Compare(*previous) != 0) {
      return PreconditionFailure{name, "LowDesiredVersion",
                                 fmt::format("{} is less than the current target {}, and the only supported rollback is to "
                                             "the cluster's previous version {} ({})",
                                             Text(target), Text(current), Text(*previous), entry.image)};
    }
    if (previous->major() == current.major() && previous->minor() == current.minor()) return std::nullopt;
    return PreconditionFailure{name, "LowDesiredVersion",
                               fmt::format("{} is less than the current target {} and matches the cluster's previous "
                                           "version, but rollbacks that change major or minor versions are not recommended",
                                           Text(target), Text(current))};
  }
  return PreconditionFailure{name, "LowDesiredVersion",
                             fmt::format("{} is less than the current target {}, and the cluster has no previous Semantic "
                                         "Version",
                                         Text(target), Text(current))};
}

std::optional<PreconditionFailure> GiantHop(const Version& current, const Version& target) {
  const char* name = "ClusterVersionGiantHop";
  if (target.major() > current.major()) {
    if (target.major() == 5 && current.major() == 4 && target.minor() == 0) return std::nullopt;
    return PreconditionFailure{
        name, "MajorVersionUpdate",
        fmt::format("{} has a larger major version than the current target {} ({} > {}), and only updates within the "
                    "current major version{} are supported.",
                    Text(target), Text(current), target.major(), current.major(),
                    target.major() == 5 && current.major() == 4 ? " or to 5.0" : "")};
  }
  if (target.minor() > current.minor() + 1) {
    return PreconditionFailure{
        name, "MultipleMinorVersionsUpdate",
        fmt::format("{} is more than one minor version beyond the current target {} ({}.{} > {}.({}+1)), and only updates "
                    "within the current minor version or to the next minor version are supported.",
                    Text(target), Text(current), target.major(), target.minor(), current.major(), current.minor())};
  }
  return std::nullopt;
}

// The newest Completed history version, else the oldest entry's (the CVO's GetCurrentVersion).
std::string CompletedVersion(const ClusterVersion& cv) {
  for (const auto& h : cv.status.history) {
    if (h.state == "Completed") return h.version;
  }
  return cv.status.history.empty() ? "" : cv.status.history.back().version;
}

std::optional<PreconditionFailure> Upgradeable(const ClusterVersion& cv, const Version& current, const Version& target) {
  const char* name = "ClusterVersionUpgradeable";
  const Condition* up = cv.FindCondition("Upgradeable");
  if (!up || up->status != "False") return std::nullopt;
  const bool patch_only = target.major() == current.major() && target.minor() == current.minor();
  if (target.Compare(current) <= 0 || patch_only) {
    // A retarget during a minor or major update in progress is allowed, with a warning.
    auto completed = Version::Parse(CompletedVersion(cv));
    const Condition* progressing = cv.FindCondition("Progressing");
    if (patch_only && completed.ok() && progressing && progressing->status == "True") {
      const std::string kind = completed->major() != current.major()   ? "Major"
                               : completed->minor() != current.minor() ? "Minor"
                                                                       : "";
      if (!kind.empty()) {
        return PreconditionFailure{name, kind + "VersionClusterUpdateInProgress",
                                   fmt::format("Retarget to {} while a {} version update from {} to {} is in progress",
                                               Text(target), kind == "Major" ? "major" : "minor", completed->ToString(),
                                               Text(current)),
                                   false};
      }
    }
    return std::nullopt;
  }
  return PreconditionFailure{name, up->reason, up->message};
}

std::optional<PreconditionFailure> RecommendedUpdate(const ClusterVersion& cv, const std::string& target) {
  const char* name = "ClusterVersionRecommendedUpdate";
  const std::string& current = cv.status.desired.version;
  for (const auto& r : cv.status.available_updates) {
    if (r.version == target) return std::nullopt;
  }
  for (const auto& u : cv.status.conditional_updates) {
    if (u.release.version != target) continue;
    for (const auto& c : u.conditions) {
      if (c.type != "Recommended") continue;
      if (c.status == "True") return std::nullopt;
      if (c.status == "False") {
        return PreconditionFailure{name, c.reason,
                                   fmt::format("Update from {} to {} is not recommended:\n\n{}", current, target, c.message),
                                   false};
      }
      return PreconditionFailure{name, c.reason,
                                 fmt::format("Update from {} to {} is {}={}: {}: {}", current, target, c.type, c.status,
                                             c.reason, c.message),
                                 false};
    }
    return PreconditionFailure{name, "UnknownConditionType",
                               fmt::format("Update from {} to {} has a status.conditionalUpdates entry, but no Recommended "
                                           "condition.",
                                           current, target),
                               false};
  }
  if (cv.spec.channel.empty()) {
    return PreconditionFailure{name, "NoChannel",
                               fmt::format("Configured channel is unset, so the recommended status of updating from {} to {} "
                                           "is unknown.",
                                           current, target),
                               false};
  }
  const Condition* retrieved = cv.FindCondition("RetrievedUpdates");
  std::string message;
  if (!retrieved) {
    message = fmt::format("No RetrievedUpdates, so the recommended status of updating from {} to {} is unknown.", current, target);
  } else if (retrieved->status == "True") {
    message = fmt::format("RetrievedUpdates=True ({}), so the update from {} to {} is probably neither recommended nor "
                          "supported.",
                          retrieved->reason, current, target);
  } else {
    message = fmt::format("RetrievedUpdates={} ({}), so the recommended status of updating from {} to {} is unknown.",
                          retrieved->status, retrieved->reason, current, target);
  }
  return PreconditionFailure{name, "UnknownUpdate", message, false};
}

std::optional<PreconditionFailure> ReleasePrevious(const Version& current, const Version& target,
                                                   const std::vector<Version>& previous) {
  if (target.Compare(current) < 0) return std::nullopt;  // a rollback: ClusterVersionRollback decides
  for (const Version& v : previous) {
    if (v.Compare(current) == 0) return std::nullopt;
  }
  std::vector<std::string> listed;
  for (const Version& v : previous) listed.push_back(v.ToString());
  return PreconditionFailure{
      "ReleasePrevious", "NotAnUpdateFromCurrentVersion",
      fmt::format("the release {} does not declare an update from the current version {}: its release-metadata previous "
                  "is [{}]",
                  Text(target), Text(current), fmt::join(listed, ", "))};
}

}  // namespace

std::vector<PreconditionFailure> RunPreconditions(const ClusterVersion& cv, const std::string& target_version,
                                                  const std::vector<Version>& previous) {
  std::vector<PreconditionFailure> out;
  auto current = Version::Parse(cv.status.desired.version);
  auto target = Version::Parse(target_version);
  auto add = [&](std::optional<PreconditionFailure> f) {
    if (f) out.push_back(std::move(*f));
  };
  const char* names[] = {"ClusterVersionRollback", "ClusterVersionGiantHop", "ClusterVersionUpgradeable"};
  if (!current.ok() || !target.ok()) {
    for (const char* name : names) {
      if (!current.ok()) {
        out.push_back({name, "InvalidCurrentVersion", current.status().message(), false});
      } else {
        out.push_back({name, "InvalidDesiredVersion", target.status().message(), true});
      }
    }
  } else {
    add(Rollback(cv, *current, *target));
    add(GiantHop(*current, *target));
    add(Upgradeable(cv, *current, *target));
  }
  add(RecommendedUpdate(cv, target_version));
  if (current.ok() && target.ok()) add(ReleasePrevious(*current, *target, previous));
  return out;
}

std::optional<PreconditionSummary> Summarize(const std::vector<PreconditionFailure>& failures, bool force) {
  if (failures.empty()) return std::nullopt;
  std::vector<std::string> messages;
  bool warning_only = true;
  for (const auto& f : failures) {
    messages.push_back(fmt::format("Precondition \"{}\" failed because of \"{}\": {}", f.name, f.reason, f.message));
    warning_only &= !f.blocking;
  }
  PreconditionSummary summary;
  summary.message = messages.size() == 1 ? messages[0]
                                         : fmt::format("Multiple precondition checks failed:\n* {}", fmt::join(messages, "\n* "));
  if (force && !warning_only) {
    summary.message = "Forced through blocking failures: " + summary.message;
    warning_only = true;
  }
  summary.blocked = !warning_only;
  return summary;
}

}  // namespace cincinnati::agent
