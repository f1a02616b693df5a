// Durations and date-times of graph-data schema 2 (phased rollouts).
//
// Durations are ISO 8601 / RFC 3339 appendix A: "P" then weeks (W) and days (D), and
// after "T" hours (H), minutes (M) and seconds (S), e.g. P2D, P14D, PT36H, P1W, P1DT12H.
// "P0S" (seconds without "T") is accepted as the design writes it. Years and months are
// refused: their length varies. Date-times are RFC 3339 ("2020-05-12T00:00:00Z",
// offsets, fractions), and also without seconds ("2020-05-12T00:00Z") as the design's
// own example is written. Results are in seconds (durations) and Unix seconds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace cincinnati::graphdata {

Result<int64_t> ParseDuration(std::string_view text);
Result<int64_t> ParseDateTime(std::string_view text);
std::string FormatDateTime(int64_t unix_seconds);  // "2020-05-12T00:00:00Z"

}  // namespace cincinnati::graphdata
