// What a fleet simulation found, and where it writes it.
//
// FleetResults is filled by the simulation as it runs (counters, hourly adoption rows,
// one record per failing edge) and completed at the end with the service's brakes
// (GET {prefix}/v1/brakes). WriteOutputs writes, in the output directory:
//   adoption.csv   one row per simulated hour: clusters per version, failed and updating
//                  clusters, and per failing edge the clusters that took it and failed it
//   adoption.svg   those curves as shares of the fleet, with each brake marked
//   summary.json   everything below, machine-readable
// (versions.csv, one row per change, is streamed by the simulation as changes happen.)
// PrintSummary writes the same summary for people. Times are Unix seconds on the
// simulated clock; -1 means "never".
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"
#include "fleet/fleet_spec.h"
#include "fleet/service_documents.h"
#include "reports/start_order.h"

namespace cincinnati::fleet {

struct EdgeResult {
  FailureRule rule{};
  uint64_t took = 0;          // clusters that started an update on the edge
  uint64_t completed = 0, failed = 0;
  uint64_t stopped_at_start = 0;  // meant to take it, found it gone at the poll before starting
  std::vector<int64_t> start_times{};  // of each update on the edge (for "before the brake")
  int64_t first_failure = -1;
  // The service's brake rule at its default settings, applied by the simulator to the
  // reports the service accepted: when the service should brake. The sequential rule (the
  // default) on the attempts in start order, announced by their Started reports (a failed
  // cluster stays at its version: no known-bad sites here); the Wilson rule (20 clusters,
  // lower bound above 5 % at 95 %) on the final reports when the service it starts is
  // given --brakes.rule wilson.
  int64_t rule_crossed = -1;
  uint64_t reported = 0, reported_failed = 0;
  std::shared_ptr<reports::StartOrderSettler> start_order{};  // the sequential rule's attempts
  std::optional<ServiceBrake> brake{};  // from the service, at the end
  uint64_t TookBefore(int64_t t) const;
};

struct AdoptionRow {
  int64_t time = 0;
  std::vector<uint32_t> per_version;  // by version index (shorter: 0 beyond)
  uint32_t failed = 0, updating = 0;
  std::vector<uint64_t> edge_took, edge_failed;  // per failing edge, cumulative
};

struct FleetResults {
  // The run.
  uint64_t clusters = 0;
  int64_t start = 0, end = 0;
  double time_scale = 0;
  bool brakes = true;
  std::string channel, arch;
  double real_seconds = 0;
  // Requests.
  uint64_t requests = 0, polls = 0, start_polls = 0, probes = 0, reports_sent = 0;
  uint64_t polls_answered_locally = 0;  // polls whose answer could not show an update
  uint64_t http_errors = 0, answers_parsed = 0, connections = 0;
  double max_lag = 0;  // simulated seconds between an event's time and when it was sent
  double max_report_lag = 0;  // the same, for the ends of updates (their reports)
  // Simulated seconds (whole) between a poll's time and when its answer was acted on (a
  // start is recorded then): the send lag, the service's answer and any stall of this process.
  double max_answer_lag = 0;
  double graph_seconds = 0, report_seconds = 0;  // real time the requests took, summed
  uint64_t generations = 0;  // changes of the channel's answer (or rollouts) the probes saw
  // Reports: the final ones (outcomes), and the Started ones apart (an announced start
  // is no outcome); unsent: either kind, still waiting for a retry at the end.
  uint64_t reports_accepted = 0, reports_duplicate = 0, reports_unsent = 0;
  std::map<std::string, uint64_t> reports_refused;  // by the service's kind
  uint64_t starts_accepted = 0, starts_duplicate = 0;
  std::map<std::string, uint64_t> starts_refused;  // by the service's kind
  bool wilson_rule = false;  // the service applies brakes.rule wilson (rule_crossed)
  // The fleet.
  std::vector<std::string> version_names;  // by version index
  std::vector<EdgeResult> edges;           // one per failure rule, in flag order
  std::vector<AdoptionRow> adoption;
  uint64_t updates_started = 0, updates_completed = 0, updates_failed = 0;
};

Status WriteOutputs(const FleetResults& results, const std::string& out_dir);
std::string SummaryJson(const FleetResults& results);
void PrintSummary(const FleetResults& results, std::ostream& out);
// The adoption chart as a self-contained SVG document.
std::string AdoptionSvg(const FleetResults& results);

}  // namespace cincinnati::fleet
