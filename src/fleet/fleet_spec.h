// What a fleet simulation is told (`cincinnati fleet simulate`), and the
// parsers of the flag values that describe the fleet:
//
//   durations       "0", "90s", "30m", "6h", "2d", "1h30m"          ParseSimDuration
//   distributions   "X" (always X), "exp:X" (exponential, mean X),  ParseDistribution
//                   "uniform:A-B" (A <= B)
//   failure rules   "4.13.1->4.13.2: 20%, component=network"         ParseFailureRule
//                   (options: component=NAME, reason=CamelCase;
//                   reason defaults to ClusterOperatorDegraded)
//   start versions  "4.13.1=70%,4.13.0=30%" (shares add up to 100)   ParseStartVersions
//
// Every parser is total: a value it cannot read is an InvalidArgument that quotes it
// and says what was expected. Every number has a cap (a duration at most 366 days, a
// fleet at most 10 million clusters), so no flag can make the simulator allocate or
// wait without bound. Pure; never throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cincinnati::fleet {

inline constexpr int64_t kMaxSimSeconds = int64_t{366} * 86400;
inline constexpr uint64_t kMaxClusters = 10'000'000;

Result<int64_t> ParseSimDuration(std::string_view text);
std::string FormatSimDuration(int64_t seconds);  // "1h30m", "2d", "0s"

struct Distribution {
  enum class Kind { kFixed, kExponential, kUniform };
  Kind kind = Kind::kFixed;
  int64_t a = 0, b = 0;  // fixed: a; exponential: mean a; uniform: [a, b]
  // A draw for u in [0, 1), in whole seconds, capped at kMaxSimSeconds.
  int64_t Sample(double u) const;
  std::string ToString() const;
};
Result<Distribution> ParseDistribution(std::string_view text);

struct FailureRule {
  std::string from, to;  // versions as the graph names them
  double rate = 0;       // share of the clusters taking the edge that fail, [0, 1]
  std::string component;
  std::string reason = "ClusterOperatorDegraded";
};
Result<FailureRule> ParseFailureRule(std::string_view text);

struct VersionShare {
  std::string version;
  double share = 0;  // [0, 1]; the shares of a list add up to 1
};
Result<std::vector<VersionShare>> ParseStartVersions(std::string_view text);

// Everything one run needs; the command fills it from its flags.
struct SimulationSpec {
  // The service: a running one at `service_url` ({prefix} base, e.g.
  // http://127.0.0.1:8081/api/upgrades_info), or one started from releases + graph-data.
  std::string service_url;
  // Where the brakes are listed (GET {prefix}/v1/brakes): the graph builder behind a
  // policy engine; empty: the service.
  std::string brakes_url;
  std::string releases, graph_data;
  std::vector<std::string> serve_args;  // passed through to `cincinnati serve`
  bool brakes = true;
  // Simulated time: the clock reads `start` at the real instant `epoch` (Unix seconds)
  // and runs `time_scale` times as fast as real time.
  int64_t start = 0;
  double time_scale = 1000;
  double epoch = 0;  // 0: chosen when the simulator starts the service itself
  int64_t seconds = 14 * 86400;  // simulated run length
  // The fleet.
  uint64_t clusters = 10'000;
  uint64_t seed = 1;
  std::string channel, arch = "amd64";
  std::vector<VersionShare> start_versions;
  double auto_update_share = 1.0;
  Distribution delay{};
  Distribution update_duration{Distribution::Kind::kFixed, 3600, 3600};
  std::vector<FailureRule> failures;
  // Mechanics.
  std::string out_dir;
  int64_t probe_every = 60;  // simulated seconds between probes of the channel's answer
  int parallel = 32;         // requests in flight at once
};

// The checks that need several fields at once (flags read on their own are checked by
// their parsers): a channel, start versions, a positive scale, a run length...
Status ValidateSpec(const SimulationSpec& spec);

}  // namespace cincinnati::fleet
