#include "operator/scheduler.h"

#include <fmt/format.h>

#include "graph-data/time_format.h"

namespace cincinnati::upgrade {

std::string FormatTime(TimePoint t) {
  return graphdata::FormatDateTime(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
}

Result<TimePoint> ParseTime(std::string_view text) {
  CINCINNATI_ASSIGN_OR_RETURN(int64_t seconds, graphdata::ParseDateTime(text));
  // The clock counts nanoseconds in 64 bits: about the years 1678 to 2262.
  constexpr int64_t kLimit = 9'000'000'000;
  if (seconds < -kLimit || seconds > kLimit) return Status::InvalidArgument(fmt::format("{}: out of the clock's range", text));
  return TimePoint(std::chrono::seconds(seconds));
}

std::string UpgradeAtError(std::string_view upgrade_at) {
  return fmt::format("Failed to parse upgradeAt:{} during validation (an RFC 3339 time is needed, such as "
                     "2026-12-01T03:00:00Z)",
                     upgrade_at);
}

Result<ScheduleDecision> Schedule(std::string_view upgrade_at, TimePoint now, std::chrono::minutes window) {
  auto at = ParseTime(upgrade_at);
  if (!at.ok()) return Status::InvalidArgument(UpgradeAtError(upgrade_at));
  ScheduleDecision d;
  d.ready = now >= *at;
  d.breached = window.count() > 0 && now > *at + window;
  if (!d.ready) d.time_until = std::chrono::ceil<std::chrono::seconds>(*at - now);
  return d;
}

}  // namespace cincinnati::upgrade
