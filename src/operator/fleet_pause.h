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
// Two readings. Current() reads the store (a standby, tests): an error when the store
// cannot be read, and the operator then holds every upgrade and says why (a pause it
// cannot read must not let upgrades start). The leader reads memory instead: Load()
// (when it takes over) reads the pause and the acknowledgements once, and InForce() and
// DueOnFailures() answer from memory without I/O, so that the operator may ask under
// its own lock. Before a Load (or after a failed one) InForce() is an error (upgrades
// wait). Every change (Pause, Resume, PauseOnFailures) is written through to the store
// first and changes memory only once its writes succeeded; a failed write is returned
// (to the administrator) and memory keeps what the store had.
// Flags: pause.reason, pause.version ("" or absent: every version),
// pause.acknowledged.<version> (failures acknowledged by the last resume).
// Thread-safe; never throws. Changes are serialized by a lock held across their writes;
// memory has its own lock, never held across I/O.
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
  // `listing` (the same store, when it can list flags by prefix) lets Load() read every
  // acknowledgement; without it only the pause is loaded.
  explicit FleetPauses(FlagStore& flags, StateStore* listing = nullptr) : flags_(flags), listing_(listing) {}

  // The pause in force, read from the store (reason empty: none).
  Result<FleetPause> Current() const;
  // Reads the pause and the acknowledgements into memory (I/O).
  Status Load();
  // The pause in force, from memory; an error before a successful Load.
  Result<FleetPause> InForce() const;
  // From memory, no write: the pause PauseOnFailures would set now (nullopt: none, or
  // a pause is in force already, or nothing is loaded).
  std::optional<FleetPause> DueOnFailures(const std::map<std::string, int>& failed, int threshold) const;
  // An administrator's pause of every upgrade ("" becomes "paused by an administrator",
  // or keeps the reason of a pause in force).
  Status Pause(const std::string& reason);
  // Ends any pause; `failed` (failed upgrades by target version, now) is acknowledged.
  Status Resume(const std::map<std::string, int>& failed);
  // Pauses upgrades to the first version whose failures since the last resume reach
  // `threshold` (0 or less: never), when no pause is in force. Returns the pause it set.
  // Decided from memory once loaded, else from the store.
  Result<std::optional<FleetPause>> PauseOnFailures(const std::map<std::string, int>& failed, int threshold);

 private:
  struct Memory {
    bool loaded = false;
    FleetPause pause;
    std::map<std::string, int> acknowledged;  // by version
  };
  Status Set(const FleetPause& pause);
  Result<FleetPause> ReadPause() const;
  Result<int> ReadAcknowledged(const std::string& version) const;
  static std::optional<FleetPause> Due(const Memory& memory, const std::map<std::string, int>& failed, int threshold);
  Memory Snapshot() const;

  // One change at a time (held across its writes): an administrator's pause racing a
  // pause on failures must not end up as a pause of one version.
  mutable std::mutex change_mu_;
  mutable std::mutex memory_mu_;  // guards memory_; never held across I/O
  Memory memory_;
  FlagStore& flags_;
  StateStore* listing_;
};

}  // namespace cincinnati::upgrade
