// Time in the upgrade operator: RFC 3339 text <-> clock time, and the MUO's scheduler:
// an upgrade is ready at or after `upgradeAt`; `breached` when now is past upgradeAt +
// the upgrade window (we honour it, the MUO does not: an upgrade that could not start in
// its window does not start hours later).
//
// Pure functions; never throw.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "core/status.h"

namespace cincinnati::upgrade {

using TimePoint = std::chrono::system_clock::time_point;

std::string FormatTime(TimePoint t);                  // "2024-06-20T12:00:00Z"
Result<TimePoint> ParseTime(std::string_view text);   // RFC 3339, any offset

struct ScheduleDecision {
  bool ready = false;
  bool breached = false;
  std::chrono::seconds time_until{0};  // until upgradeAt (0 when ready)
};

// Why `upgrade_at` is refused: the managed-upgrade operator's words ("Failed to parse
// upgradeAt:<s> during validation"), then what would be taken.
std::string UpgradeAtError(std::string_view upgrade_at);

// Errors (UpgradeAtError) when `upgrade_at` is not RFC 3339.
Result<ScheduleDecision> Schedule(std::string_view upgrade_at, TimePoint now, std::chrono::minutes window);

}  // namespace cincinnati::upgrade
