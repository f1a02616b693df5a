#include "operator/fleet_pause.h"

#include <charconv>

#include <fmt/format.h>

namespace cincinnati::upgrade {
namespace {

constexpr char kReason[] = "pause.reason";
constexpr char kVersion[] = "pause.version";
constexpr char kAcknowledged[] = "pause.acknowledged.";

}  // namespace

Result<FleetPause> FleetPauses::Current() const {
  std::lock_guard lock(mu_);
  return CurrentLocked();
}

Result<FleetPause> FleetPauses::CurrentLocked() const {
  CINCINNATI_ASSIGN_OR_RETURN(std::optional<std::string> reason, flags_.GetFlag(kReason));
  FleetPause pause;
  if (!reason) return pause;
  pause.reason = reason->empty() ? "(no reason given)" : *reason;
  // A version that cannot be read holds every upgrade, as a pause without one does.
  if (auto version = flags_.GetFlag(kVersion); version.ok() && *version) pause.version = **version;
  return pause;
}

Status FleetPauses::Set(const FleetPause& pause) {
  CINCINNATI_RETURN_IF_ERROR(flags_.SetFlag(kVersion, pause.version));
  return flags_.SetFlag(kReason, pause.reason);
}

Status FleetPauses::Pause(const std::string& reason) {
  std::lock_guard lock(mu_);
  return Set({reason.empty() ? "paused by an administrator" : reason, ""});
}

Status FleetPauses::Resume(const std::map<std::string, int>& failed) {
  std::lock_guard lock(mu_);
  for (const auto& [version, count] : failed) {
    CINCINNATI_RETURN_IF_ERROR(flags_.SetFlag(kAcknowledged + version, std::to_string(count)));
  }
  CINCINNATI_RETURN_IF_ERROR(flags_.ClearFlag(kVersion));
  return flags_.ClearFlag(kReason);
}

Result<std::optional<FleetPause>> FleetPauses::PauseOnFailures(const std::map<std::string, int>& failed, int threshold) {
  if (threshold <= 0) return std::optional<FleetPause>();
  std::lock_guard lock(mu_);
  CINCINNATI_ASSIGN_OR_RETURN(FleetPause current, CurrentLocked());
  if (!current.reason.empty()) return std::optional<FleetPause>();
  for (const auto& [version, count] : failed) {
    CINCINNATI_ASSIGN_OR_RETURN(std::optional<std::string> acknowledged, flags_.GetFlag(kAcknowledged + version));
    int seen = 0;
    if (acknowledged) std::from_chars(acknowledged->data(), acknowledged->data() + acknowledged->size(), seen);
    if (count - seen < threshold) continue;
    FleetPause pause{fmt::format("{} upgrade(s) to {} failed (fleet.failureThreshold {})", count - seen, version, threshold),
                     version};
    CINCINNATI_RETURN_IF_ERROR(Set(pause));
    return std::optional<FleetPause>(std::move(pause));
  }
  return std::optional<FleetPause>();
}

}  // namespace cincinnati::upgrade
