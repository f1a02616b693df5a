// A simulated cluster's life: when it polls, decides, starts, finishes and reports.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/date_time.h"
#include "fleet/fleet_random.h"
#include "fleet/simulation.h"
#include "policy/phased_rollout.h"

namespace cincinnati::fleet {

uint32_t Simulation::Interval(uint32_t c) const {
  return 120 + static_cast<uint32_t>(DrawUnit(spec_.seed, c, Draw::kInterval) * 120);  // [2 min, 4 min), as the CVO
}

// The cluster's first poll instant at or after `t`: it polls at phase + k * interval.
uint32_t Simulation::NextPollInstant(uint32_t c, int64_t t) const {
  const int64_t interval = Interval(c);
  const auto phase = static_cast<int64_t>(DrawUnit(spec_.seed, c, Draw::kPhase) * static_cast<double>(interval));
  const int64_t k = t <= phase ? 0 : (t - phase + interval - 1) / interval;
  return static_cast<uint32_t>(std::min<int64_t>(phase + k * interval, kNever - 1));
}

void Simulation::SchedulePoll(uint32_t c, int64_t at_or_after) {
  const uint32_t due = NextPollInstant(c, at_or_after);
  Cluster& cl = clusters_[c];
  if (due >= cl.poll_due || static_cast<int64_t>(due) >= spec_.seconds) return;
  cl.poll_due = due;
  Push(due, c, Kind::kPoll);
}

// The cluster's next phased instant after `after` (an edge from its version appears for
// its id): a poll at its next poll instant from then on. An instant that may already
// have passed by the time the service answered gets one extra poll, which changes
// nothing when the answer had it already.
void Simulation::SchedulePhased(uint32_t c, uint32_t after) {
  const Cluster& cl = clusters_[c];
  if (!cl.auto_update || cl.version >= channel_.windows_from.size()) return;
  int64_t next = INT64_MAX;
  std::string id;
  for (const Window& w : channel_.windows_from[cl.version]) {
    if (w.begin + w.duration <= begin_ + after) continue;  // over: every cluster sees it
    if (id.empty()) id = ClusterId(spec_.seed, c);
    const double appears = static_cast<double>(w.begin) + policy::RolloutPosition(id, w.to_name) * static_cast<double>(w.duration);
    const auto instant = static_cast<int64_t>(std::ceil(appears)) - begin_;
    if (instant > after) next = std::min<int64_t>(next, std::max<int64_t>(instant, after + 1));
  }
  if (next != INT64_MAX) SchedulePoll(c, next);
}

// Whether a phased edge from the cluster's version has appeared for its id by `t`: its
// answer may then hold an edge the answer without id does not.
bool Simulation::PhasedEdgeAppeared(uint32_t c, uint32_t t) const {
  const Cluster& cl = clusters_[c];
  if (cl.version >= channel_.windows_from.size()) return false;
  std::string id;
  for (const Window& w : channel_.windows_from[cl.version]) {
    // Not begun, or over (then the answer without id has it too).
    if (w.begin > begin_ + t || w.begin + w.duration <= begin_ + t) continue;
    if (id.empty()) id = ClusterId(spec_.seed, c);
    const double appears = static_cast<double>(w.begin) + policy::RolloutPosition(id, w.to_name) * static_cast<double>(w.duration);
    if (appears <= static_cast<double>(begin_ + t)) return true;
  }
  return false;
}

// Whether the cluster's answer at `t` can recommend an update from its version: the
// answer without id does, or a phased edge from its version has appeared for its id.
bool Simulation::AnswerMayOfferUpdate(uint32_t c, uint32_t t) const {
  if (channel_.idless && channel_.idless->NewestFrom(clusters_[c].version) != kNoVersion) return true;
  return PhasedEdgeAppeared(c, t);
}

int64_t Simulation::DelayOf(uint32_t c) const {
  return spec_.delay.Sample(DrawUnit(spec_.seed, c, Draw::kDelay, HashText(versions_.Name(clusters_[c].version))));
}

// A poll is sent when its answer decides something the answer without id cannot tell:
// a phased edge may be in it for this id, or the cluster would start an update at once
// (the poll right before starting is always asked). Otherwise the cluster's answer is
// the one without id, byte for byte, and it is read from the probe's.
void Simulation::DispatchPoll(uint32_t c, uint32_t t) {
  Cluster& cl = clusters_[c];
  if (cl.poll_due != t) return;  // a later poll replaced this one, or it was sent already
  cl.poll_due = kNever;
  if (polls_ == PollMode::kAll) {
    // As an agent: every interval, whatever it is doing (the answer matters only when idle).
    SchedulePoll(c, t + 1);
    if (cl.phase != Phase::kFresh && cl.phase != Phase::kIdle) {
      ++results_.polls;
      Send(FleetRequest{.url = GraphUrl(c), .poll_receipt = cl.receipt}, Pending{.kind = Kind::kPoll, .who = c, .t = t, .version = cl.version});
      return;
    }
  }
  if (cl.phase != Phase::kFresh && cl.phase != Phase::kIdle) return;
  const uint16_t local = channel_.idless ? channel_.idless->NewestFrom(cl.version) : kNoVersion;
  const bool ask = polls_ == PollMode::kAll ||
                   (cl.auto_update && (PhasedEdgeAppeared(c, t) || (local != kNoVersion && DelayOf(c) == 0)));
  if (ask) {
    ++results_.polls;
    Send(FleetRequest{.url = GraphUrl(c), .poll_receipt = cl.receipt}, Pending{.kind = Kind::kPoll, .who = c, .t = t, .version = cl.version});
    return;
  }
  ++results_.polls_answered_locally;
  cl.phase = Phase::kIdle;
  if (!cl.auto_update) return;
  if (local != kNoVersion) return Decide(c, t, local);
  SchedulePhased(c, t);
}

void Simulation::DispatchStart(uint32_t c, uint32_t t) {
  Cluster& cl = clusters_[c];
  if (cl.phase != Phase::kWaiting) return;
  ++results_.start_polls;
  Send(FleetRequest{.url = GraphUrl(c), .poll_receipt = cl.receipt}, Pending{.kind = Kind::kStart, .who = c, .t = t, .version = cl.version});
}

int Simulation::EdgeIndex(uint16_t from, uint16_t to) const {
  for (size_t i = 0; i < tally_.edge_keys.size(); ++i) {
    if (tally_.edge_keys[i].first == from && tally_.edge_keys[i].second == to) return static_cast<int>(i);
  }
  return -1;
}

// An update is recommended: the admin takes it after their delay, or at once.
void Simulation::Decide(uint32_t c, uint32_t t, uint16_t target) {
  Cluster& cl = clusters_[c];
  const int64_t delay = DelayOf(c);
  cl.target = target;
  if (delay == 0) return StartUpdate(c, t, target);  // the poll that found it was the one before starting
  cl.phase = Phase::kWaiting;
  Push(static_cast<uint32_t>(std::min<int64_t>(t + delay, kNever - 1)), c, Kind::kStart);
}

void Simulation::StartUpdate(uint32_t c, uint32_t t, uint16_t target) {
  Cluster& cl = clusters_[c];
  cl.phase = Phase::kUpdating;
  cl.target = target;
  cl.started = t;
  ++tally_.updating;
  ++results_.updates_started;
  if (const int edge = EdgeIndex(cl.version, target); edge >= 0) {
    ++results_.edges[static_cast<size_t>(edge)].took;
    results_.edges[static_cast<size_t>(edge)].start_times.push_back(begin_ + t);
  }
  const int64_t duration = std::max<int64_t>(
      1, spec_.update_duration.Sample(DrawUnit(spec_.seed, c, Draw::kDuration, HashText(versions_.Name(cl.version)),
                                                HashText(versions_.Name(target)))));
  Push(static_cast<uint32_t>(std::min<int64_t>(t + duration, kNever - 1)), c, Kind::kFinish);
  // Announced as an agent does, so that the service counts attempts in start order; the
  // same attempt id as the report its end sends.
  QueueReport(UpdateReport{.cluster_id = ClusterId(spec_.seed, c),
                           .attempt = fmt::format("{:016x}", DrawBits(spec_.seed, c, Draw::kFailure, cl.version,
                                                                      static_cast<uint64_t>(cl.started))),
                           .from = versions_.Name(cl.version),
                           .to = versions_.Name(target),
                           .arch = spec_.arch,
                           .channel = spec_.channel,
                           .result = UpdateResult::kStarted,
                           .started = begin_ + t},
              cl.receipt);
}

uint32_t Simulation::QueueReport(UpdateReport report, std::string receipt) {
  uint32_t slot;
  if (reports_.free.empty()) {
    slot = static_cast<uint32_t>(reports_.queued.size());
    reports_.queued.emplace_back();
  } else {
    slot = reports_.free.back();
    reports_.free.pop_back();
  }
  reports_.queued[slot] = QueuedReport{std::move(report), std::move(receipt), 0};
  SendReport(slot);
  return slot;
}

void Simulation::DispatchFinish(uint32_t c, uint32_t t) {
  Cluster& cl = clusters_[c];
  if (cl.phase != Phase::kUpdating) return;
  const uint16_t from = cl.version, to = cl.target;
  const int edge = EdgeIndex(from, to);
  const FailureRule* rule = edge >= 0 ? &results_.edges[static_cast<size_t>(edge)].rule : nullptr;
  const bool failed =
      rule && DrawUnit(spec_.seed, c, Draw::kFailure, HashText(versions_.Name(from)), HashText(versions_.Name(to))) < rule->rate;
  const std::string id = ClusterId(spec_.seed, c);
  AppendVersionRow(fmt::format("{},{},{},{},{}\n", FormatUnixSeconds(begin_ + t), id, versions_.Name(from),
                               versions_.Name(to), failed ? "Failed" : "Completed"));
  --tally_.updating;
  if (failed) {
    cl.phase = Phase::kFailed;  // stays at `from` and does not retry
    ++tally_.failed;
    ++results_.updates_failed;
    EdgeResult& e = results_.edges[static_cast<size_t>(edge)];
    ++e.failed;
    if (e.first_failure < 0) e.first_failure = begin_ + t;
  } else {
    if (tally_.per_version.size() <= to) tally_.per_version.resize(to + 1u, 0);
    --tally_.per_version[from];
    ++tally_.per_version[to];
    cl.version = to;
    cl.phase = Phase::kIdle;
    cl.target = kNoVersion;
    ++results_.updates_completed;
    if (edge >= 0) ++results_.edges[static_cast<size_t>(edge)].completed;
    cl.poll_due = t;  // it asks again at once after an update
    Push(t, c, Kind::kPoll);
  }
  UpdateReport r{.cluster_id = id,
                 .attempt = fmt::format("{:016x}", DrawBits(spec_.seed, c, Draw::kFailure, from, static_cast<uint64_t>(cl.started))),
                 .from = versions_.Name(from),
                 .to = versions_.Name(to),
                 .arch = spec_.arch,
                 .channel = spec_.channel,
                 .result = failed ? UpdateResult::kFailed : UpdateResult::kCompleted,
                 .component = failed ? rule->component : "",
                 .reason = failed ? rule->reason : "",
                 .started = begin_ + cl.started,
                 .ended = begin_ + t};
  // The receipt of its polls at `from` goes with the report; a cluster that moved on
  // starts a new one at `to`.
  QueueReport(std::move(r), failed ? cl.receipt : std::move(cl.receipt));
  if (!failed) cl.receipt.clear();
}

void Simulation::SendReport(uint32_t slot) {
  const QueuedReport& q = reports_.queued[slot];
  ++results_.reports_sent;
  FleetRequest request{.url = fmt::format("{}/v1/reports?id={}", base_url_, q.report.cluster_id), .body = EncodeUpdateReport(q.report)};
  if (!q.receipt.empty()) request.poll_receipt = q.receipt;
  Send(std::move(request), Pending{.kind = Kind::kReport, .who = slot});
}

}  // namespace cincinnati::fleet
