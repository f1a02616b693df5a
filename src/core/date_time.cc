#include "core/date_time.h"

#include <fmt/format.h>

namespace cincinnati {

std::string FormatUnixSeconds(int64_t t) {
  constexpr int64_t kYear0 = -62167219200;       // 0000-01-01T00:00:00Z
  constexpr int64_t kYear10000 = 253402300800;   // 10000-01-01T00:00:00Z
  if (t < kYear0 || t >= kYear10000) return fmt::format("unix time {}", t);
  int64_t days = t >= 0 ? t / 86400 : (t - 86399) / 86400;
  int64_t secs = t - days * 86400;
  // Civil from days (Howard Hinnant's algorithm, the inverse of days-from-civil).
  int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", y, m, d, secs / 3600, secs / 60 % 60, secs % 60);
}

}  // namespace cincinnati
