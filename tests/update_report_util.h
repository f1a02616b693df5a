// Update reports for tests: cluster n's attempt on an edge (4.13.1 -> 4.13.2 unless
// said), started and ended at `at`; a failure is ClusterOperatorDegraded on `component`.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "core/update_report.h"

namespace cincinnati::testing {

inline std::string TestClusterId(int n) { return fmt::format("00000000-0000-4000-8000-{:012x}", n); }

inline UpdateReport TestReport(int n, bool failed, const std::string& attempt, int64_t at, const std::string& component = "network",
                               const std::string& from = "4.13.1", const std::string& to = "4.13.2") {
  UpdateReport r;
  r.cluster_id = TestClusterId(n);
  r.attempt = attempt;
  r.from = from;
  r.to = to;
  r.arch = "amd64";
  r.channel = "stable-4.13";
  r.result = failed ? UpdateResult::kFailed : UpdateResult::kCompleted;
  r.reason = failed ? "ClusterOperatorDegraded" : "";
  r.component = failed ? component : "";
  r.started = at;
  r.ended = at;
  return r;
}

}  // namespace cincinnati::testing
