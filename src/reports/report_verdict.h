// ReportVerdict: what became of one update report handed to the graph builder's brake
// board, as the board says it and as it travels back to the policy engine that passed the
// report on (report_relay.h) and to the agent that sent it. Plain data.
#pragma once

#include <string>

namespace cincinnati::reports {

struct ReportVerdict {
  enum class Kind { kRecorded, kDuplicate, kRefused };
  Kind kind = Kind::kRecorded;
  std::string why;  // kRefused: why it was not recorded (the agent is answered 400 with it)
  bool operator==(const ReportVerdict&) const = default;
};

}  // namespace cincinnati::reports
