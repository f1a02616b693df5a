#include "operator/fleet_pause.h"

#include <charconv>

#include <fmt/format.h>

namespace cincinnati::upgrade {
namespace {

constexpr char kReason[] = "pause.reason";
constexpr char kVersion[] = "pause.version";
constexpr char kAcknowledged[] = "pause.acknowledged.";

int CountOf(const std::string& text) {
  int n = 0;
  std::from_chars(text.data(), text.data() + text.size(), n);
  return n;
}

}  // namespace

Result<FleetPause> FleetPauses::Current() const {
  std::lock_guard lock(change_mu_);
  return ReadPause();
}

Result<FleetPause> FleetPauses::ReadPause() const {
  CINCINNATI_ASSIGN_OR_RETURN(std::optional<std::string> reason, flags_.GetFlag(kReason));
  FleetPause pause;
  if (!reason) return pause;
  pause.reason = reason->empty() ? "(no reason given)" : *reason;
  // A version that cannot be read holds every upgrade, as a pause without one does.
  if (auto version = flags_.GetFlag(kVersion); version.ok() && *version) pause.version = **version;
  return pause;
}

Result<int> FleetPauses::ReadAcknowledged(const std::string& version) const {
  CINCINNATI_ASSIGN_OR_RETURN(std::optional<std::string> acknowledged, flags_.GetFlag(kAcknowledged + version));
  return acknowledged ? CountOf(*acknowledged) : 0;
}

Status FleetPauses::Load() {
  std::lock_guard lock(change_mu_);
  Memory loaded;
  auto pause = ReadPause();
  Status read = pause.status();
  if (read.ok() && listing_) {
    auto acknowledged = listing_->Flags(kAcknowledged);
    read = acknowledged.status();
    if (read.ok()) {
      for (const auto& [key, value] : *acknowledged) {
        if (key.rfind(kAcknowledged, 0) == 0) loaded.acknowledged[key.substr(sizeof(kAcknowledged) - 1)] = CountOf(value);
      }
    }
  }
  std::lock_guard memory(memory_mu_);
  if (!read.ok()) {
    memory_ = {};  // not loaded: upgrades wait
    return read;
  }
  loaded.loaded = true;
  loaded.pause = std::move(*pause);
  memory_ = std::move(loaded);
  return Status::OK();
}

FleetPauses::Memory FleetPauses::Snapshot() const {
  std::lock_guard lock(memory_mu_);
  return memory_;
}

Result<FleetPause> FleetPauses::InForce() const {
  std::lock_guard lock(memory_mu_);
  if (!memory_.loaded) return Status::IoError("the fleet's pause was not read from the state store yet");
  return memory_.pause;
}

std::optional<FleetPause> FleetPauses::Due(const Memory& memory, const std::map<std::string, int>& failed, int threshold) {
  if (threshold <= 0 || !memory.loaded || !memory.pause.reason.empty()) return std::nullopt;
  for (const auto& [version, count] : failed) {
    auto seen = memory.acknowledged.find(version);
    const int fresh = count - (seen == memory.acknowledged.end() ? 0 : seen->second);
    if (fresh < threshold) continue;
    return FleetPause{fmt::format("{} upgrade(s) to {} failed (fleet.failureThreshold {})", fresh, version, threshold), version};
  }
  return std::nullopt;
}

std::optional<FleetPause> FleetPauses::DueOnFailures(const std::map<std::string, int>& failed, int threshold) const {
  std::lock_guard lock(memory_mu_);
  return Due(memory_, failed, threshold);
}

Status FleetPauses::Set(const FleetPause& pause) {
  CINCINNATI_RETURN_IF_ERROR(flags_.SetFlag(kVersion, pause.version));
  CINCINNATI_RETURN_IF_ERROR(flags_.SetFlag(kReason, pause.reason));
  std::lock_guard lock(memory_mu_);
  memory_.pause = pause;
  return Status::OK();
}

Status FleetPauses::Pause(const std::string& reason) {
  std::lock_guard lock(change_mu_);
  if (reason.empty()) {
    // A pause of a paused fleet without a reason keeps the reason it has: the default
    // must not replace what an administrator (or the failures) said.
    const Memory known = Snapshot();
    Result<FleetPause> current = known.loaded ? Result<FleetPause>(known.pause) : ReadPause();
    if (!current.ok()) return current.status();
    if (!current->reason.empty()) return Status::OK();
  }
  return Set({reason.empty() ? "paused by an administrator" : reason, ""});
}

Status FleetPauses::Resume(const std::map<std::string, int>& failed) {
  std::lock_guard lock(change_mu_);
  for (const auto& [version, count] : failed) {
    CINCINNATI_RETURN_IF_ERROR(flags_.SetFlag(kAcknowledged + version, std::to_string(count)));
    std::lock_guard memory(memory_mu_);
    memory_.acknowledged[version] = count;
  }
  CINCINNATI_RETURN_IF_ERROR(flags_.ClearFlag(kVersion));
  CINCINNATI_RETURN_IF_ERROR(flags_.ClearFlag(kReason));
  std::lock_guard memory(memory_mu_);
  memory_.pause = {};
  return Status::OK();
}

Result<std::optional<FleetPause>> FleetPauses::PauseOnFailures(const std::map<std::string, int>& failed, int threshold) {
  if (threshold <= 0) return std::optional<FleetPause>();
  std::lock_guard lock(change_mu_);
  Memory known = Snapshot();
  if (!known.loaded) {  // not loaded (a standby, tests): read what is needed
    CINCINNATI_ASSIGN_OR_RETURN(known.pause, ReadPause());
    for (const auto& [version, count] : failed) {
      CINCINNATI_ASSIGN_OR_RETURN(known.acknowledged[version], ReadAcknowledged(version));
    }
    known.loaded = true;
  }
  std::optional<FleetPause> due = Due(known, failed, threshold);
  if (due) CINCINNATI_RETURN_IF_ERROR(Set(*due));
  return due;
}

}  // namespace cincinnati::upgrade
