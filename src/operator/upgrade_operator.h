// UpgradeOperator: the managed-upgrade operator's role for a fleet. It keeps one
// UpgradeConfig per cluster of the fleet file, read from its source (config_source.h:
// LOCAL files or an OCM upgrade-policy service), reconciles each on its own schedule
// (reconciler.h), persists every pass (state_store.h), and holds upgrades back for the
// fleet (fleet_hold.h): at most `fleet.maxParallel` clusters upgrading at once, waves in
// the order of `fleet.waves` (by the cluster label `fleet.waveLabel`), and a pause
// (fleet_pause.h) once `fleet.failureThreshold` upgrades to one version failed, until an
// administrator resumes.
//
// Concurrency: passes run on a bounded pool of `workers` threads, each due cluster's
// pass as one task, oldest due first; a cluster is never in two passes at once (its
// pass is dispatched again only after the last one ended). A pass waits only on its own
// agent (bounded by `agent_timeout`); hooks, probes, webhooks, Prometheus and
// Alertmanager run outside it on `call_threads` more threads (pending_calls.h), and the
// cluster is requeued as soon as one of its calls ends. So a hanging peer holds one
// thread for its time limit and delays no other cluster, unless more than `workers`
// agents hang at once. The fleet's holds stay exact: a cluster is admitted to start
// under the operator's lock, and counts as upgrading from that moment.
//
// No I/O under the operator's lock (mu_): the API (List, Get, FleetStatus, Metrics,
// Pause, Resume) answers while a state store call hangs. The leader keeps the fleet's
// pause and its acknowledgements in memory (fleet_pause.h: loaded once per term, before
// its first pass; changes written through, memory changed after the write succeeded, a
// failed write refused to the administrator). The source sync is planned under the
// lock, written outside it one config at a time, and applied under it again (a write
// that failed is not applied and is planned again at the next sync; the sync and the
// dispatch of passes share one thread, so no planned cluster enters a pass meanwhile,
// and that is checked). A Conflict from any write steps the replica down. A pass's
// write that fails otherwise is kept in memory as unsaved: the cluster's next pass (1 s
// later) writes it before it does anything else, and does nothing while it cannot; a
// store unwritable for longer than the leader's lease less its margin (10 s without a
// lease) steps the replica down rather than act on state it could not save.
//
// Prompt progress: while a cluster's control plane updates, the operator watches its
// agent's ClusterVersion (agent_client.h; thousands of watches on one thread) and runs
// the cluster's next pass as soon as it changes, rather than an interval later. A watch
// that breaks (the agent hands over to its successor) reconnects at once and then backs
// off (50 ms doubling to 2 s) from the same resourceVersion, so a change made during the
// break is seen as soon as the agent answers; a pass that finds the agent unreachable
// during an update watches it the same way. An unreachable agent's error (in any phase)
// is logged at once but shown as the cluster's note only once the agent stayed
// unreachable for 3 x `agent_timeout` (30 s by default): until then the last good note
// stays. When a pass
// frees a slot of `fleet.maxParallel` or ends a wave (its cluster leaves Upgrading, or
// finishes), every cluster whose last pass was held for a slot or a wave is due at
// once, and a resume makes every cluster held by the pause due at once: the next
// cluster starts a pass later, not an interval later.
//
// Source rules, as the managed-upgrade operator's: a config that appears is created with
// an empty status; a changed spec replaces it, except while its upgrade is commanded (the
// change waits, and the cluster's note says why); a config that disappears is deleted,
// with the same guard.
//
// Clock: `clock` (real by default; tests pass an env::ManualClock and call RunOnce()
// after each Advance), or `testing_now` advancing at `time_scale` operator seconds per
// clock second, so that hours of schedule run in seconds. Passes are due, and back off,
// on the clock's steady time. `make_ports` builds each cluster's ports (HTTP to its
// agent, Prometheus, Alertmanager by default; tests give fakes).
//
// Replicas (leadership.h): only the leader reconciles, reads the source and changes the
// state. A standby re-reads the configs from the store when asked (at most once a
// second, on a call thread: its answers never wait on the database, they show its last
// view meanwhile), so that its read API answers as the leader's does (a pause or resume
// there is refused with a Conflict that names the leader, known from its start), and
// tries to lead every second. A replica that takes over reads the whole state after its
// epoch is taken, forgets every call result and unsaved write of an earlier term, waits
// out its predecessor's grace (none when that term was recorded as ended cleanly), then
// passes every cluster at once. A replica that loses leadership, or cannot renew it
// within its lease less the margin, starts no pass, no agent command and no call more (a
// gate on each, checked just before it starts), kills its running hooks, and the store
// refuses its writes. Its role (Standby, WaitingOut, Acting, Lapsed) is one state with
// one table of moves (ReplicaRoleState, leadership.h). A clean stop keeps renewing until
// its passes ended, kills its running hooks, waits for its calls, and records that its
// term ended cleanly, so that the next leader acts at once; after a kill -9 the next
// waits out the grace. With SQLite the lock is a file lock in --state-dir; with
// --state.postgres, a PostgreSQL session lock (postgres_state.h).
//
// What the API shows (List, Get, FleetStatus, Metrics) is shaped by operator_view.h.
//
// Thread-safety: Run() on one thread; List/Get/Pause/Resume/Metrics from any thread.
// Never throws.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "env/clock.h"
#include "kube/json_value.h"
#include "operator/config_source.h"
#include "operator/fleet_pause.h"
#include "operator/leadership.h"
#include "operator/notifications.h"
#include "operator/operator_config.h"
#include "operator/operator_metrics.h"
#include "operator/pending_calls.h"
#include "operator/policy_service.h"
#include "operator/ports.h"
#include "operator/reconciler.h"
#include "operator/state_store.h"

namespace cincinnati::http {
class LongPolls;
}

namespace cincinnati::upgrade {

// What the ports of one cluster are made of; tests give fakes (OperatorOptions::make_ports).
struct ClusterPortSet {
  std::unique_ptr<UpdateAgent> agent;
  std::unique_ptr<AlertSource> alerts;
  std::unique_ptr<MaintenanceWindows> windows;
  std::unique_ptr<ReleaseResolver> resolver;
  std::unique_ptr<GraphClient> graph;
  std::unique_ptr<HookRunner> hooks;
  ClusterPorts view() const { return {agent.get(), alerts.get(), windows.get(), resolver.get(), graph.get(), hooks.get()}; }
};

struct OperatorOptions {
  std::string config_path;  // empty: defaults
  std::string fleet_path;   // required
  std::string state_dir;    // required without postgres_url: state.db and operator.lock live here
  std::string postgres_url;  // the state in PostgreSQL, shared by replicas (empty: SQLite in state_dir)
  std::string replica_name;  // this replica in logs and a standby's answers (empty: host:pid)
  std::string configs_dir;  // overrides configManager.localConfigDir
  std::chrono::seconds interval{60};  // operator time between passes while New or Upgrading
  double time_scale = 1.0;
  std::optional<TimePoint> testing_now;
  env::Clock* clock = &env::RealClock();
  std::function<ClusterPortSet(const FleetCluster&, const OperatorConfig&)> make_ports;  // empty: HTTP
  int workers = 32;                                // passes at once
  int call_threads = 64;                           // calls outside the passes at once
  std::chrono::seconds agent_timeout{10};          // one call to a cluster's agent
  // Tests: wraps the opened store (faults on demand); empty: the store as opened.
  std::function<std::unique_ptr<StateStore>(std::unique_ptr<StateStore>)> wrap_store;
};

class UpgradeOperator {
 public:
  static Result<std::unique_ptr<UpgradeOperator>> Open(OperatorOptions options);

  ~UpgradeOperator();
  void Run(std::stop_token stop);
  // One round: re-read the source, reconcile every due cluster (in parallel) and return
  // when their passes have ended. Exposed for tests.
  void RunOnce();
  void Wake();

  TimePoint Now() const;
  kube::JsonValue List();
  std::optional<kube::JsonValue> Get(const std::string& cluster);
  // Why the source could not read the cluster's UpgradeConfig at its last read ("": it could).
  std::string UnreadableConfig(const std::string& cluster);
  kube::JsonValue FleetStatus();
  Status Pause(const std::string& reason);
  Status Resume();
  std::string Metrics();
  // Configs per phase of their newest history entry ("New" without one): cheap to ask often.
  std::map<std::string, int> ClustersPerPhase();
  ReplicaRole Role() const;  // leadership.h: the role, now
  bool Leading() const;  // WaitingOut or Acting: leads, and renewed its leadership recently enough to act
  bool Acting() const;   // Acting: leads, and its predecessor's grace is over: it may start side effects

 private:
  enum class HoldKind { kNone, kPause, kSlots };  // why the fleet held a pass
  struct ClusterState {
    FleetCluster cluster;
    ClusterPortSet ports;
    std::unique_ptr<PendingCalls> calls;
    env::Clock::SteadyTime due{};
    std::chrono::seconds backoff{0};
    std::string note;
    std::string last_error;
    uint64_t passes = 0;
    bool in_flight = false;  // a pass is queued or running
    bool queued = false;     // in passes_.due_queue at `due`
    bool rerun = false;      // a call ended during the pass: run again at once
    struct {
      bool watching = false;  // a watch of its agent is open
      int64_t seen = -1;      // the agent's resourceVersion its last pass read (its pass only)
      env::Clock::SteadyTime unreachable_since{};  // its agent could not be read since ({}: it could)
    } agent;
    std::string logged_error;  // the last error logged (its pass only)
    HoldKind held = HoldKind::kNone;  // what held its last pass: a slot (maxParallel) or a wave, or the pause
    bool unsaved = false;     // its config in configs_ is not in the store yet (set by its passes, under mu_)
    env::Clock::SteadyTime unsaved_since{};
    double last_pass_seconds = 0;
    TimePoint last_reconciled{};
  };
  UpgradeOperator(OperatorOptions options, OperatorConfig config, std::vector<FleetCluster> fleet, std::unique_ptr<StateStore> store,
                  std::unique_ptr<Leadership> leadership);
  // One election round (each second): the leader renews, a standby tries to lead.
  void Elect();
  void TakeOver();
  // The saved configs of clusters in the fleet file (clusters_ never changes after Open).
  std::map<std::string, UpgradeConfig> FleetConfigs(std::vector<UpgradeConfig> saved) const;
  void StepDown(const std::string& why);
  void RefreshStandby();  // a standby re-reads the configs for its read API (not under mu_)
  void SetLeaderMetric(bool leading);
  Status RequireLeader();  // a Conflict naming the leader on a standby
  void SyncSource();
  struct SyncWrite {
    std::string cluster;
    std::optional<UpgradeConfig> base;  // configs_' entry when planned
    std::optional<UpgradeConfig> put;   // nullopt: delete
  };
  std::vector<SyncWrite> PlanSync(SourceRead& read);  // under mu_
  // Under mu_: the first `written` writes succeeded; they change configs_.
  void ApplySync(std::vector<SyncWrite>& writes, const std::vector<bool>& written, env::Clock::SteadyTime term);
  // The leader's pause into memory, once per term, before its passes (not under mu_).
  void LoadPauses();
  // Marks the due clusters in flight and queues their passes, oldest due first (under mu_).
  size_t DispatchDue();
  void SetDue(ClusterState& state, env::Clock::SteadyTime due);  // under mu_
  void ReconcileCluster(ClusterState& state);
  // The config a dispatched pass works on; nullopt when it is not to run (Run() stopped,
  // leadership went, the config is gone), its bookkeeping done.
  std::optional<UpgradeConfig> StartPass(ClusterState& state);
  // Under mu_: the end of a pass (its state, its config, its next due time).
  void FinishPass(ClusterState& state, UpgradeConfig config, const PassResult& result, HoldKind held, double seconds);
  // Writes the config a failed write left unsaved, before the cluster's pass does
  // anything; false when it still cannot (the pass is skipped and requeued).
  bool SaveUnsaved(ClusterState& state, const UpgradeConfig& config);
  // Under mu_: the outcome of a write of the cluster's config; true when the store stayed
  // unwritable longer than UnwritableLimit() (the caller steps down, outside mu_).
  bool NoteSave(ClusterState& state, const Status& saved);
  std::chrono::milliseconds UnwritableLimit() const;
  std::string UnwritableWhy(const Status& saved) const;  // why it steps down
  std::chrono::seconds AgentGrace() const;  // an unreachable agent's error shows after it
  // Under mu_: every cluster held for a slot or a wave (or by the pause) due at once.
  void WakeHeld(bool pause_held);
  void CallEnded(ClusterState& state);
  // Opens a watch of the cluster's agent (one at a time) that requeues it on a change.
  void WatchAgent(ClusterState& state, int64_t seen);
  std::string Hold(const UpgradeConfig& config, HoldKind& held);  // under mu_; no I/O
  std::string Admit(const UpgradeConfig& config, HoldKind& held);  // under mu_: Hold, and counts it as upgrading when it may start
  void CheckFailureThreshold();
  std::map<std::string, int> FailedPerVersion();  // failed upgrades by target version
  std::map<std::string, int> FailedPerVersionLocked();
  std::chrono::steady_clock::duration RealDelay(std::chrono::seconds operator_time) const;

  OperatorOptions options_;
  OperatorConfig config_;
  std::unique_ptr<StateStore> store_;
  // This replica among others: its hold on leadership and what it does meanwhile.
  struct Replica {
    std::unique_ptr<Leadership> leadership;
    ReplicaRoleState role;  // on the clock's steady time
    std::string election_said;  // what the election thread last logged (who leads, why it cannot): said once
    env::Clock::SteadyTime standby_read{};  // a standby's last read of the configs (under mu_)
  };
  Replica replica_;
  FleetPauses pauses_;  // in memory on the leader (fleet_pause.h)
  struct {
    std::optional<env::Clock::SteadyTime> term;  // the term (its acting_from) they were loaded in (under mu_)
    std::string said;  // the last failure to load them, logged once
  } pauses_loaded_;
  GaugeTable metrics_;
  std::unique_ptr<NotificationCenter> notifications_;
  // Operator time's origin (Now()): the steady clock at start, and the time it stands for.
  struct {
    env::Clock::SteadyTime steady;
    TimePoint at;
  } started_;

  std::mutex mu_;  // guards configs_ and the notes of clusters_
  std::map<std::string, UpgradeConfig> configs_;  // by cluster
  // The UpgradeConfigs the last source sync could not act on.
  struct ConfigProblems {
    std::map<std::string, std::string> unreadable;  // by cluster: why the last read failed
    std::set<std::string> unknown;                  // clusters named by one, not in the fleet file
  } config_problems_;
  std::map<std::string, std::unique_ptr<ClusterState>> clusters_;
  std::unique_ptr<PolicyService> policies_;  // source OCM
  PolicyIndex policy_index_;
  std::unique_ptr<ConfigSource> source_;
  // When passes run: what is due, what is in flight, and the waits on both (under mu_
  // but `stopping`).
  struct Passes {
    std::condition_variable_any wake;
    bool woken = false;
    size_t in_flight = 0;         // passes queued or running
    // Clusters not in a pass, by the time their next one is due: no scan of the fleet
    // at each wake-up.
    std::set<std::pair<env::Clock::SteadyTime, ClusterState*>> due_queue;
    bool ended = false;           // since the failure threshold was last checked
    bool sync_requested = false;  // Wake(): re-read the source now
    std::atomic<bool> stopping{false};  // Run() was stopped: queued passes are dropped
    std::condition_variable_any idle;   // in_flight reached 0
  };
  Passes passes_;
  // Last, so that they stop first: their threads use everything above.
  std::unique_ptr<CallRunner> call_runner_;
  std::unique_ptr<http::LongPolls> agent_watches_;  // the agents' watches, on one thread
  std::unique_ptr<CallRunner> pass_pool_;
};

}  // namespace cincinnati::upgrade
