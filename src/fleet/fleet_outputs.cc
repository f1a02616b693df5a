// adoption.csv, summary.json and the printed summary of a fleet simulation.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "core/date_time.h"
#include "core/json_writer.h"
#include "core/semver.h"
#include "env/file_system.h"
#include "fleet/fleet_results.h"

namespace cincinnati::fleet {
namespace {

std::string Time(int64_t t) { return t < 0 ? "null" : JsonString(FormatUnixSeconds(t)); }

std::string Seconds(int64_t from, int64_t to) { return from < 0 || to < 0 ? "null" : std::to_string(to - from); }

// Versions that ever had a cluster, oldest first.
std::vector<size_t> UsedVersions(const FleetResults& r) {
  std::vector<size_t> used;
  for (size_t v = 0; v < r.version_names.size(); ++v) {
    for (const AdoptionRow& row : r.adoption) {
      if (v < row.per_version.size() && row.per_version[v] > 0) {
        used.push_back(v);
        break;
      }
    }
  }
  std::sort(used.begin(), used.end(),
            [&](size_t a, size_t b) { return VersionNameLess(r.version_names[a], r.version_names[b]); });
  return used;
}

uint32_t CountAt(const AdoptionRow& row, size_t v) { return v < row.per_version.size() ? row.per_version[v] : 0; }

double MeanMs(double seconds, uint64_t n) { return n ? seconds * 1000 / static_cast<double>(n) : 0; }

std::string EdgeName(const FailureRule& rule) { return rule.from + "->" + rule.to; }

// Checked to the end and renamed into place: a full disk is an error, never a cut CSV.
// The umask decides who may read it, as for any file a user makes.
Status WriteText(const std::string& path, const std::string& text) {
  return env::WriteFileDurably(path, text, env::DefaultFileSystem(), env::kUserFileMode);
}

std::string AdoptionCsv(const FleetResults& r) {
  const std::vector<size_t> used = UsedVersions(r);
  std::string out = "time";
  for (size_t v : used) out += "," + r.version_names[v];
  out += ",failed,updating";
  for (const EdgeResult& e : r.edges) out += fmt::format(",took {0},failed {0}", EdgeName(e.rule));
  out += '\n';
  for (const AdoptionRow& row : r.adoption) {
    out += FormatUnixSeconds(row.time);
    for (size_t v : used) out += fmt::format(",{}", CountAt(row, v));
    out += fmt::format(",{},{}", row.failed, row.updating);
    for (size_t i = 0; i < r.edges.size(); ++i) out += fmt::format(",{},{}", row.edge_took[i], row.edge_failed[i]);
    out += '\n';
  }
  return out;
}

std::string EdgeJson(const EdgeResult& e) {
  const int64_t brake = e.brake ? e.brake->since : -1;
  std::string brake_json = "null";
  if (e.brake) {
    brake_json = fmt::format(R"({{"since":{},"state":{},"clusters":{},"failures":{},"firstFailure":{}}})", Time(e.brake->since),
                             JsonString(e.brake->state), e.brake->clusters, e.brake->failures, Time(e.brake->first_failure));
  }
  return fmt::format(
      R"({{"from":{},"to":{},"failureRate":{},"component":{},"took":{},"tookBeforeBrake":{},"completed":{},"failed":{},)"
      R"("inProgress":{},"stoppedAtStart":{},"firstFailure":{},"ruleCrossed":{},"brake":{},"timeToBrakeSeconds":{},)"
      R"("brakeAfterRuleSeconds":{},"tookBeforeRuleCrossed":{}}})",
      JsonString(e.rule.from), JsonString(e.rule.to), e.rule.rate, JsonString(e.rule.component), e.took,
      brake < 0 ? e.took : e.TookBefore(brake), e.completed, e.failed, e.took - e.completed - e.failed, e.stopped_at_start,
      Time(e.first_failure), Time(e.rule_crossed), brake_json, Seconds(e.first_failure, brake), Seconds(e.rule_crossed, brake),
      e.rule_crossed < 0 ? e.took : e.TookBefore(e.rule_crossed));
}

// {"kind":n,...} without its braces.
std::string RefusedJson(const std::map<std::string, uint64_t>& refused) {
  std::string out;
  for (const auto& [kind, n] : refused) out += fmt::format("{}{}:{}", out.empty() ? "" : ",", JsonString(kind), n);
  return out;
}

}  // namespace

uint64_t EdgeResult::TookBefore(int64_t t) const {
  return static_cast<uint64_t>(std::count_if(start_times.begin(), start_times.end(), [t](int64_t s) { return s < t; }));
}

std::string SummaryJson(const FleetResults& r) {
  std::string versions;
  const AdoptionRow* last = r.adoption.empty() ? nullptr : &r.adoption.back();
  for (size_t v : UsedVersions(r)) {
    versions += fmt::format("{}{}:{}", versions.empty() ? "" : ",", JsonString(r.version_names[v]), last ? CountAt(*last, v) : 0);
  }
  const std::string refused = RefusedJson(r.reports_refused);
  std::string edges;
  for (const EdgeResult& e : r.edges) {
    if (!edges.empty()) edges += ',';
    edges += EdgeJson(e);
  }
  return fmt::format(
      R"({{"clusters":{},"channel":{},"arch":{},"start":{},"end":{},"timeScale":{},"brakes":{},"realSeconds":{:.1f},)"
      R"("maxLagSeconds":{:.1f},"maxLagRealSeconds":{:.3f},"maxReportLagSeconds":{:.1f},"maxAnswerLagSeconds":{:.1f},"generations":{},)"
      R"("requests":{{"total":{},"polls":{},"startPolls":{},"reports":{},"probes":{},"pollsAnsweredLocally":{},"errors":{},)"
      R"("answersParsed":{},"connections":{},"meanGraphMs":{:.2f},"meanReportMs":{:.2f}}},)"
      R"("updates":{{"started":{},"completed":{},"failed":{},"inProgress":{}}},)"
      R"("reports":{{"accepted":{},"duplicate":{},"unsent":{},"refused":{{{}}},)"
      R"("started":{{"accepted":{},"duplicate":{},"refused":{{{}}}}}}},)"
      R"("finalVersions":{{{}}},"failedClusters":{},"edges":[{}]}})"
      "\n",
      r.clusters, JsonString(r.channel), JsonString(r.arch), Time(r.start), Time(r.end), r.time_scale, r.brakes, r.real_seconds,
      r.max_lag, r.max_lag / r.time_scale, r.max_report_lag, r.max_answer_lag, r.generations, r.requests, r.polls, r.start_polls, r.reports_sent, r.probes,
      r.polls_answered_locally, r.http_errors, r.answers_parsed, r.connections,
      MeanMs(r.graph_seconds, r.polls + r.start_polls + r.probes), MeanMs(r.report_seconds, r.reports_sent), r.updates_started, r.updates_completed,
      r.updates_failed, r.updates_started - r.updates_completed - r.updates_failed, r.reports_accepted, r.reports_duplicate,
      r.reports_unsent, refused, r.starts_accepted, r.starts_duplicate, RefusedJson(r.starts_refused), versions, last ? last->failed : 0, edges);
}

Status WriteOutputs(const FleetResults& r, const std::string& dir) {
  CINCINNATI_RETURN_IF_ERROR(WriteText(dir + "/adoption.csv", AdoptionCsv(r)));
  CINCINNATI_RETURN_IF_ERROR(WriteText(dir + "/adoption.svg", AdoptionSvg(r)));
  return WriteText(dir + "/summary.json", SummaryJson(r));
}

void PrintSummary(const FleetResults& r, std::ostream& out) {
  out << fmt::format("fleet: {} clusters on {} ({}), {} to {} at {}x, brakes {}\n", r.clusters, r.channel, r.arch,
                     FormatUnixSeconds(r.start), FormatUnixSeconds(r.end), r.time_scale, r.brakes ? "on" : "off");
  out << fmt::format("updates: {} started, {} completed, {} failed, {} still running\n", r.updates_started, r.updates_completed,
                     r.updates_failed, r.updates_started - r.updates_completed - r.updates_failed);
  for (const EdgeResult& e : r.edges) {
    const int64_t brake = e.brake ? e.brake->since : -1;
    out << fmt::format("edge {} ({:.0f}% fail): {} clusters took it, {} before its brake; {} failed; {} stopped by the brake "
                       "at their start\n",
                       EdgeName(e.rule), e.rule.rate * 100, e.took, brake < 0 ? e.took : e.TookBefore(brake), e.failed,
                       e.stopped_at_start);
    out << fmt::format("  first failure {}; rule crossed {}; brake {}{}\n",
                       e.first_failure < 0 ? "never" : FormatUnixSeconds(e.first_failure),
                       e.rule_crossed < 0 ? "never" : FormatUnixSeconds(e.rule_crossed),
                       e.brake ? FormatUnixSeconds(brake) + " (" + e.brake->state + ")" : "none",
                       e.brake && e.first_failure >= 0 ? fmt::format(", {} s after the first failure", brake - e.first_failure) : "");
  }
  auto total = [](const std::map<std::string, uint64_t>& by_kind) {
    uint64_t n = 0;
    for (const auto& [kind, count] : by_kind) n += count;
    return n;
  };
  out << fmt::format("reports: {} accepted, {} duplicate, {} refused, {} unsent; starts announced: {} accepted, {} duplicate, "
                     "{} refused\n",
                     r.reports_accepted, r.reports_duplicate, total(r.reports_refused), r.reports_unsent, r.starts_accepted,
                     r.starts_duplicate, total(r.starts_refused));
  out << fmt::format("requests: {} ({} polls, {} before starting, {} reports, {} probes; {} errors), {} polls answered "
                     "locally; {} answers parsed, {} connections; {:.2f} ms a graph request, {:.2f} ms a report\n",
                     r.requests, r.polls, r.start_polls, r.reports_sent, r.probes, r.http_errors, r.polls_answered_locally,
                     r.answers_parsed, r.connections, MeanMs(r.graph_seconds, r.polls + r.start_polls + r.probes),
                     MeanMs(r.report_seconds, r.reports_sent));
  out << fmt::format("largest pacing lag {:.1f} simulated s ({:.3f} real s; {:.1f} s for the ends of updates; {:.1f} s from a "
                     "poll to acting on its answer); {} changes of the channel seen; {:.1f} real s\n",
                     r.max_lag, r.max_lag / r.time_scale, r.max_report_lag, r.max_answer_lag, r.generations, r.real_seconds);
}

}  // namespace cincinnati::fleet
