// What the simulation does with the service's answers: graph answers to clusters and
// probes, and the verdicts on reports.
#include <fmt/format.h>

#include <algorithm>

#include "core/strings.h"
#include "fleet/service_documents.h"
#include "fleet/simulation.h"
#include "reports/brake_rule.h"
#include "reports/report_ledger.h"
#include "reports/sequential_brake.h"

namespace cincinnati::fleet {
namespace {

constexpr size_t kMaxAnswerBytes = size_t{64} << 20;
constexpr int kReportTries = 20;

// The "kind" of the service's error document, for counting refusals.
std::string ErrorKind(const std::string& body) {
  const size_t at = body.find("\"kind\":\"");
  if (at == std::string::npos) return "unknown";
  const size_t end = body.find('"', at + 8);
  return end == std::string::npos || end - at - 8 > 64 ? "unknown" : body.substr(at + 8, end - at - 8);
}

}  // namespace

void Simulation::OnResponse(FleetResponse&& response) {
  const Pending p = requests_.pending[response.tag];
  requests_.free.push_back(response.tag);
  (p.kind == Kind::kReport ? results_.report_seconds : results_.graph_seconds) += response.seconds;
  if (response.status == 0) ++results_.http_errors;
  switch (p.kind) {
    case Kind::kPoll:
    case Kind::kStart: return OnClusterAnswer(p, response);
    case Kind::kReport: return OnReportAnswer(p, response);
    case Kind::kProbe: return p.probe_rollouts ? OnProbeRollouts(p, response) : OnProbeGraph(p, response);
    case Kind::kFinish: return;
  }
}

std::shared_ptr<const AnswerDigest> Simulation::Digest(FleetResponse& r) {
  if (r.body_skipped) return answers_.Find(r.etag);
  std::string inflated;
  if (r.gzip) {
    auto body = Inflate(r.body, kMaxAnswerBytes);
    if (!body.ok()) {
      Note(body.status().message());
      return nullptr;
    }
    inflated = std::move(body).value();
  }
  auto digest = DigestAnswer(r.gzip ? inflated : r.body, versions_);
  if (!digest.ok()) {
    Note(digest.status().message());
    return nullptr;
  }
  answers_.Put(r.etag, *digest);
  if (tally_.per_version.size() < versions_.size()) tally_.per_version.resize(versions_.size(), 0);
  return *digest;
}

void Simulation::OnClusterAnswer(const Pending& p, FleetResponse& response) {
  const uint32_t c = p.who;
  Cluster& cl = clusters_[c];
  // The service counted the poll (whatever its body): its receipt says so.
  if (cl.version == p.version && !response.poll_receipt.empty() && (response.status == 200 || response.status == 304)) {
    cl.receipt = std::move(response.poll_receipt);
  }
  std::shared_ptr<const AnswerDigest> digest = response.status == 200 ? Digest(response) : nullptr;
  if (!digest) {
    if (response.status != 0) ++results_.http_errors;
    Note(fmt::format("a graph request failed: HTTP {} {}{}", response.status, response.error,
                     Abbreviate(response.gzip ? std::string() : response.body, 200)));
    // As an agent would: ask again at the next poll instant.
    if (p.kind == Kind::kPoll && (cl.phase == Phase::kIdle || cl.phase == Phase::kFresh)) SchedulePoll(c, p.t + 1);
    if (p.kind == Kind::kStart && cl.phase == Phase::kWaiting) Push(p.t + Interval(c), c, Kind::kStart);
    return;
  }
  const uint32_t t = BaseTime(p.t);
  results_.max_answer_lag = std::max(results_.max_answer_lag, static_cast<double>(t - p.t));  // what a start is recorded after its poll
  if (cl.version != p.version) return;
  const uint16_t newest = digest->NewestFrom(cl.version);
  if (p.kind == Kind::kPoll) {
    if (cl.phase != Phase::kIdle && cl.phase != Phase::kFresh) return;
    cl.phase = Phase::kIdle;
    if (!cl.auto_update) return;
    if (newest != kNoVersion) return Decide(c, t, newest);
    return SchedulePhased(c, p.t);
  }
  if (cl.phase != Phase::kWaiting) return;
  if (newest == kNoVersion) {  // what it meant to take is gone (braked): it does not start
    if (const int edge = EdgeIndex(cl.version, cl.target); edge >= 0) ++results_.edges[static_cast<size_t>(edge)].stopped_at_start;
    cl.phase = Phase::kIdle;
    cl.target = kNoVersion;
    return SchedulePhased(c, p.t);
  }
  StartUpdate(c, t, newest);
}

// The rule the service applies, applied here too to what it accepted: when the service
// should brake (fleet_results.h).
void Simulation::Judge(EdgeResult& e, const UpdateReport& report) {
  const bool start = report.result == UpdateResult::kStarted;
  const bool failed = report.result == UpdateResult::kFailed;
  const int64_t now = start ? report.started : report.ended;
  if (!start) {
    ++e.reported;
    e.reported_failed += failed;
  }
  if (e.rule_crossed >= 0) return;
  if (results_.wilson_rule) {
    const reports::EdgeCounts counts{static_cast<int64_t>(e.reported), static_cast<int64_t>(e.reported_failed)};
    if (!start && reports::Evaluate(counts, reports::BrakeRule{}).brake) e.rule_crossed = now;
    return;
  }
  if (!e.start_order) e.start_order = std::make_shared<reports::StartOrderSettler>(reports::LedgerStartOrder());
  const uint64_t key = reports::AttemptKey(report.cluster_id);
  if (start) {
    e.start_order->Start(key, report.started, false, now);
  } else {
    e.start_order->Resolve(key, report.started, failed, false, now);
  }
  for (const reports::SequentialCounts& counts : e.start_order->Settle(now)) {
    if (reports::EvaluateSequential(counts, reports::BrakeRule{}).brake) e.rule_crossed = now;
  }
}

void Simulation::OnReportAnswer(const Pending& p, const FleetResponse& response) {
  QueuedReport& q = reports_.queued[p.who];
  const bool start = q.report.result == UpdateResult::kStarted;
  if (response.status == 200) {
    const bool duplicate = response.body.find("duplicate") != std::string::npos;
    if (start) {
      ++(duplicate ? results_.starts_duplicate : results_.starts_accepted);
    } else {
      ++(duplicate ? results_.reports_duplicate : results_.reports_accepted);
    }
    const int edge = EdgeIndex(versions_.Find(q.report.from), versions_.Find(q.report.to));
    if (!duplicate && edge >= 0) Judge(results_.edges[static_cast<size_t>(edge)], q.report);
  } else if ((response.status == 0 || response.status == 429 || response.status == 503) && ++q.tries < kReportTries) {
    // Back off as the agent does, longer each time.
    Push(BaseTime(p.t) + 60u * static_cast<uint32_t>(q.tries), p.who, Kind::kReport);
    return;
  } else {
    const std::string kind = response.status == 0 ? "transport" : ErrorKind(response.body);
    ++(start ? results_.starts_refused : results_.reports_refused)[kind];
    if (kind == "unknown_poller") {
      Note("reports are refused as unknown_poller: the simulator sends only the polls that can change what a cluster does, "
           "so the service needs --reports.min_poller_age_secs 0 --reports.min_polls 1");
    }
    Note(fmt::format("a report was refused: HTTP {} {}{}", response.status, response.error, Abbreviate(response.body, 300)));
  }
  q = QueuedReport{};
  reports_.free.push_back(p.who);
}

void Simulation::OnProbeGraph(const Pending& p, FleetResponse& response) {
  if (response.status == 200) {
    std::string body = response.body;
    if (response.gzip) {
      auto inflated = Inflate(response.body, kMaxAnswerBytes);
      if (!inflated.ok()) Note(inflated.status().message());
      body = inflated.ok() ? std::move(inflated).value() : std::string();
    }
    channel_.idless_etag = response.etag;
    if (!body.empty() && body != channel_.idless_body) {
      auto digest = DigestAnswer(body, versions_);
      if (digest.ok()) {
        channel_.idless = *digest;
        channel_.idless_body = std::move(body);
        if (tally_.per_version.size() < versions_.size()) tally_.per_version.resize(versions_.size(), 0);
        Regenerate(BaseTime(p.t));
      } else {
        Note(digest.status().message());
      }
    }
  } else if (response.status != 304) {
    Note(fmt::format("the probe of the channel's answer failed: HTTP {} {}", response.status, response.error));
  }
  ++results_.probes;
  Send(FleetRequest{.url = fmt::format("{}/v1/ui/rollouts?channel={}", base_url_, QueryEscape(spec_.channel)), .gzip = false},
       Pending{.kind = Kind::kProbe, .t = p.t, .probe_rollouts = true});
}

void Simulation::OnProbeRollouts(const Pending& p, const FleetResponse& response) {
  if (response.status != 200) return;  // no page (web.enabled false): the graph probe still runs
  auto doc = ParseRollouts(response.body);
  if (!doc.ok()) return Note(doc.status().message());
  if (doc->windows == channel_.windows) return;
  SetWindows(doc->windows);
  Regenerate(BaseTime(p.t));
}

// The channel's answer changed: every idle cluster that may now see an update polls at
// its next poll instant; the others only look at their phased instants again.
void Simulation::Regenerate(uint32_t t) {
  ++results_.generations;
  for (uint32_t c = 0; c < clusters_.size(); ++c) {
    const Cluster& cl = clusters_[c];
    if (!cl.auto_update || cl.phase != Phase::kIdle) continue;
    if (AnswerMayOfferUpdate(c, t)) {
      SchedulePoll(c, t);
    } else {
      SchedulePhased(c, t);
    }
  }
}

}  // namespace cincinnati::fleet
