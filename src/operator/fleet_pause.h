// FleetPauses: the fleet's pause, typed, kept in the operator's state store so that it
// survives a restart and is shared by every replica that shares the store.
//
// A pause holds every upgrade (an administrator's `upgrades pause`) or only upgrades to
// one version (set when fleet.failureThreshold upgrades to that version failed since the
// last resume). A resume acknowledges the failures counted so far, so that only new
// ones count towards the threshold. The reason is what holds the fleet: it is written
// after the version and cleared after it, so a crash between the two writes leaves a
// pause of every version, never an unexplained one or one of the wrong version.
//
// Current() is an error when the store cannot be read; the operator then holds every
// upgrade and says why (a pause it cannot read must not let upgrades start).
// Flags: pause.reason, pause.version ("" or absent: every version),
// pause.acknowledged.<version> (failures acknowledged by the last resume).
// Thread-safe as its FlagStore; never throws.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "core/status.h"
#include "operator/fleet_hold.h"
#include "operator/state_store.h"

namespace cincinnati::upgrade {

class FleetPauses {
 public:
  explicit FleetPauses(FlagStore& flags) : flags_(flags) {}

  // The pause in force (reason empty: none).
  Result<FleetPause> Current() const;
  // An administrator's pause of every upgrade ("" becomes "paused by an administrator").
  Status Pause(const std::string& reason);
  // Ends any pause; `failed` (failed upgrades by target version, now) is acknowledged.
  Status Resume(const std::map<std::string, int>& failed);
  // Pauses upgrades to the first version whose failures since the last resume reach
  // `threshold` (0 or less: never), when no pause is in force. Returns the pause it set.
  Result<std::optional<FleetPause>> PauseOnFailures(const std::map<std::string, int>& failed, int threshold);

 private:
  Status Set(const FleetPause& pause);
  Result<FleetPause> CurrentLocked() const;
  // One change at a time: an administrator's pause racing a pause on failures must not
  // end up as a pause of one version.
  mutable std::mutex mu_;
  FlagStore& flags_;
};

}  // namespace cincinnati::upgrade
