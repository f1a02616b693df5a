// Simulation: N simulated clusters against a real update service over HTTP,
// event-driven on simulated time.
//
// Each cluster has an id (a UUID from the seed), a poll interval drawn from [2 min, 4 min)
// and a phase in it, a start version, and whether it takes updates on its own (the
// auto-update share). Events sit in one priority queue on simulated time; an event at
// time t is sent when the shared clock (env::ScaledClock, the service's too) reads t, and
// the largest lag between the two is reported.
//
// A cluster polls when its answer can change, with the outcome of a cluster polling every
// interval: its first poll (at its phase); after the probe sees a new answer of the
// channel (the channel's answer without id, and its phased rollouts, are fetched every
// `probe_every`; then every idle cluster that may now see an update polls at its next
// poll instant); at its own phased instants (begin + RolloutPosition(id, to) * duration,
// at its next poll instant); right before it starts an update; after an update.
// Such a poll is sent to the service when its answer decides something the probe's
// answer cannot tell: a cluster's edges are those of the answer without id plus the
// phased edges whose instant for its id has passed, so when no phased edge from its
// version has appeared for it, its answer is the probe's, byte for byte, and the poll is
// answered from the probe's digest, unless the cluster would start an update at once
// (the poll right before starting is always sent; it is also what the service's report
// check needs). `PollMode::kAll` polls as an agent does: every cluster every interval,
// whatever it is doing (waiting for its admin, updating, failed), each poll sent; that
// is the load of a real fleet, and what a service with its default report checks (3
// polls over 30 minutes at `from`) needs to accept the clusters' reports.
//
// On an answer that recommends an update (its `edges` from the cluster's node; the
// newest target), an auto-updating cluster waits its admin delay, polls again (if the
// target is no longer recommended, because a brake arrived, it does not start), updates
// for its drawn duration, fails per the failure model (it then stays at `from` for good)
// or moves to `to`, and reports the attempt (POST {prefix}/v1/reports; retried on 429,
// 503 and transport errors): a Started report when it starts, the final one when it
// ends (the results' accepted, duplicate and refused reports are the final ones, the
// Started ones are counted apart: they are no outcomes). Draws are hashes (fleet_random.h), so two runs that differ
// in the service alone differ in outcome because of the service alone.
//
// Each sent poll asks for a poll receipt (reports/poll_receipt.h), as our agents do: a
// cluster keeps the receipt of its current version (while it updates, the version it
// updates from), and its report sends it, so that a service of several replicas sharing
// a key can take it.
//
// Memory: 48 bytes per cluster (its receipt's string among them, and the receipt's ~55
// bytes on the heap once it has polled), plus its queued events (12 bytes each, about
// two per cluster); ids are recomputed from the seed when needed. One thread; never
// throws.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <ostream>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "core/update_report.h"
#include "env/clock.h"
#include "env/file_system.h"
#include "fleet/answer_digest.h"
#include "fleet/fleet_http.h"
#include "fleet/fleet_results.h"
#include "fleet/fleet_spec.h"

namespace cincinnati::fleet {

enum class PollMode { kNeeded, kAll };

class Simulation {
 public:
  // `base_url`: the service's {prefix}; `clock` reads the service's simulated time; the
  // run covers [begin, begin + spec.seconds).
  Simulation(const SimulationSpec& spec, PollMode polls, std::string base_url, const env::Clock& clock, int64_t begin,
             std::ostream& log);
  ~Simulation();
  // Asked about once a second: false ends the run with an error (the service died).
  void SetServiceCheck(std::function<bool()> alive) { service_alive_ = std::move(alive); }
  Result<FleetResults> Run();

 private:
  enum class Phase : uint8_t { kFresh, kIdle, kWaiting, kUpdating, kFailed };
  enum class Kind : uint8_t { kProbe, kPoll, kStart, kFinish, kReport };
  static constexpr uint32_t kNever = UINT32_MAX;
  struct Cluster {
    uint32_t poll_due = kNever;  // the pending poll's time (older queued polls are stale)
    uint32_t started = 0;        // the current update's start
    uint16_t version = 0, target = kNoVersion;
    Phase phase = Phase::kFresh;
    uint8_t auto_update = 0;
    std::string receipt;  // of its polls at `version` ("": none yet)
  };
  struct Event {
    uint32_t t;
    uint32_t who;  // a cluster, or a report's slot for kReport
    Kind kind;
    bool operator>(const Event& o) const {
      if (t != o.t) return t > o.t;
      if (kind != o.kind) return kind > o.kind;
      return who > o.who;
    }
  };
  struct Pending {
    Kind kind;
    uint32_t who = 0, t = 0;
    uint16_t version = 0;
    bool probe_rollouts = false;
  };
  struct QueuedReport {
    UpdateReport report;
    std::string receipt;  // of the cluster's polls at `from`
    int tries = 0;
  };

  // Set-up and the loop (simulation.cc).
  Status Prepare();
  Status ProbeNow();
  Status CheckFailureEdges(const std::vector<PhasedWindow>& windows) const;
  Status Loop();
  double SimNow() const;
  void Push(uint32_t t, uint32_t who, Kind kind);
  void Dispatch(const Event& e);
  static size_t LaneOf(Kind kind) { return kind == Kind::kFinish || kind == Kind::kReport ? 1 : 0; }
  uint32_t Send(FleetRequest request, Pending pending);
  void SampleUntil(int64_t t);
  Status Finish(FleetResults& results);

  // Clusters (simulation_clusters.cc).
  uint32_t Interval(uint32_t c) const;
  uint32_t NextPollInstant(uint32_t c, int64_t at_or_after) const;
  void SchedulePoll(uint32_t c, int64_t at_or_after);
  void SchedulePhased(uint32_t c, uint32_t after);
  bool PhasedEdgeAppeared(uint32_t c, uint32_t t) const;
  bool AnswerMayOfferUpdate(uint32_t c, uint32_t t) const;
  int64_t DelayOf(uint32_t c) const;
  void DispatchPoll(uint32_t c, uint32_t t);
  void DispatchStart(uint32_t c, uint32_t t);
  void DispatchFinish(uint32_t c, uint32_t t);
  void Decide(uint32_t c, uint32_t t, uint16_t target);
  void StartUpdate(uint32_t c, uint32_t t, uint16_t target);
  uint32_t QueueReport(UpdateReport report, std::string receipt);  // a slot, sent now
  void SendReport(uint32_t slot);
  std::string GraphUrl(uint32_t c) const;
  int EdgeIndex(uint16_t from, uint16_t to) const;

  // Answers (simulation_answers.cc).
  void OnResponse(FleetResponse&& response);
  std::shared_ptr<const AnswerDigest> Digest(FleetResponse& response);
  void OnClusterAnswer(const Pending& p, FleetResponse& response);
  void OnReportAnswer(const Pending& p, const FleetResponse& response);
  void Judge(EdgeResult& e, const UpdateReport& report);  // an accepted report, for rule_crossed
  void OnProbeGraph(const Pending& p, FleetResponse& response);
  void OnProbeRollouts(const Pending& p, const FleetResponse& response);
  void SetWindows(const std::vector<PhasedWindow>& windows);
  void Regenerate(uint32_t t);
  uint32_t BaseTime(uint32_t t) const;
  void Note(const std::string& what);

  const SimulationSpec& spec_;
  const PollMode polls_;
  const std::string base_url_;
  const env::Clock& clock_;
  const int64_t begin_, end_;  // Unix seconds
  std::ostream& log_;
  std::unique_ptr<FleetHttp> http_;
  VersionTable versions_;
  AnswerCache answers_;
  std::vector<Cluster> clusters_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  // Requests in flight by tag, and reports to send by slot, each with its free slots.
  struct {
    std::vector<Pending> pending;
    std::vector<uint32_t> free;
  } requests_;
  struct {
    std::vector<QueuedReport> queued;
    std::vector<uint32_t> free;
  } reports_;
  // The channel's answer without id and its phased windows, as the last probe saw them.
  struct Window {
    uint16_t to;
    std::string to_name;
    int64_t begin, duration;
  };
  struct {
    std::shared_ptr<const AnswerDigest> idless;
    std::string idless_body, idless_etag;
    std::vector<PhasedWindow> windows;
    std::vector<std::vector<Window>> windows_from;  // by from-version index
  } channel_;
  // Per failing edge: (from, to) indices; and the counts behind the samples.
  struct {
    std::vector<std::pair<uint16_t, uint16_t>> edge_keys;
    std::vector<uint32_t> per_version;
    uint32_t failed = 0, updating = 0;
    int64_t next_sample = 0;
  } tally_;
  FleetResults results_;
  // versions.csv, written in pieces of about 1 MiB; the first failed write is kept in
  // versions_csv_.error, and Finish fails the run with it.
  void AppendVersionRow(std::string_view row);
  void FlushVersions();
  struct {
    std::unique_ptr<env::WritableFile> file;
    std::string buffer;
    Status error;
  } versions_csv_;
  std::unordered_map<std::string, int> notes_;  // messages logged once each
  std::function<bool()> service_alive_;
};

}  // namespace cincinnati::fleet
