// The service's documents a fleet simulation reads besides graph answers:
//
//   GET {prefix}/v1/ui/rollouts?channel=C   {"channel":..,"now":"<RFC 3339>","rollouts":
//                                            [{"from","to","share","begin","completeAt"}]}
//     each phased edge's window: a cluster at position u (policy/phased_rollout.h,
//     RolloutPosition(id, to)) sees the edge from begin + u * (completeAt - begin) on;
//     `now` is the service's clock, which tells whether the simulator's agrees.
//   GET {prefix}/v1/brakes                   {"brakes":[{"from","to","state","since",
//                                            "firstFailure","clusters","failures",..}]}
//
// Both are parsed strictly (the fields used must be there and of their type) and capped
// at 100,000 entries. Pure; never throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cincinnati::fleet {

struct PhasedWindow {
  std::string from, to;  // versions without build metadata
  int64_t begin = 0, complete_at = 0;
  bool operator==(const PhasedWindow&) const = default;
};

struct RolloutsDocument {
  int64_t now = 0;  // the service's clock, Unix seconds
  std::vector<PhasedWindow> windows;
};
Result<RolloutsDocument> ParseRollouts(std::string_view json);

struct ServiceBrake {
  std::string from, to, state;
  int64_t since = 0, first_failure = 0;
  int64_t clusters = 0, failures = 0;
};
Result<std::vector<ServiceBrake>> ParseBrakes(std::string_view json);

}  // namespace cincinnati::fleet
