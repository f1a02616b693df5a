// UpgradeOperator: the managed-upgrade operator's role for a fleet. It keeps one
// UpgradeConfig per cluster of the fleet file, read from its source (config_source.h:
// LOCAL files or an OCM upgrade-policy service), reconciles each on its own schedule
// (reconciler.h), persists every pass (state_store.h), and holds upgrades back for the
// fleet (fleet_hold.h): at most `fleet.maxParallel` clusters upgrading at once, waves in
// the order of `fleet.waves` (by the cluster label `fleet.waveLabel`), and a pause
// (fleet_pause.h) once `fleet.failureThreshold` upgrades to one version failed, until an
// administrator resumes.
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
// What the API shows (List, Get, FleetStatus, Metrics) is shaped by operator_view.h.
//
// Thread-safety: Run() on one thread; List/Get/Pause/Resume/Metrics from any thread.
// Never throws.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "env/clock.h"
#include "kube/json_value.h"
#include "operator/config_source.h"
#include "operator/fleet_pause.h"
#include "operator/notifications.h"
#include "operator/operator_config.h"
#include "operator/operator_metrics.h"
#include "operator/policy_service.h"
#include "operator/ports.h"
#include "operator/reconciler.h"
#include "operator/state_store.h"

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
  std::string state_dir;    // required: state.db lives here
  std::string configs_dir;  // overrides configManager.localConfigDir
  std::chrono::seconds interval{60};  // operator time between passes while New or Upgrading
  double time_scale = 1.0;
  std::optional<TimePoint> testing_now;
  env::Clock* clock = &env::RealClock();
  std::function<ClusterPortSet(const FleetCluster&, const OperatorConfig&)> make_ports;  // empty: HTTP
};

class UpgradeOperator {
 public:
  static Result<std::unique_ptr<UpgradeOperator>> Open(OperatorOptions options);

  void Run(std::stop_token stop);
  // One round: re-read the source, reconcile every due cluster. Exposed for tests.
  void RunOnce();
  void Wake();

  TimePoint Now() const;
  kube::JsonValue List();
  std::optional<kube::JsonValue> Get(const std::string& cluster);
  kube::JsonValue FleetStatus();
  Status Pause(const std::string& reason);
  Status Resume();
  std::string Metrics();

 private:
  struct ClusterState {
    FleetCluster cluster;
    ClusterPortSet ports;
    env::Clock::SteadyTime due{};
    std::chrono::seconds backoff{0};
    std::string note;
    std::string last_error;
    uint64_t passes = 0;
  };
  UpgradeOperator(OperatorOptions options, OperatorConfig config, std::vector<FleetCluster> fleet, std::unique_ptr<StateStore> store);
  void SyncSource();
  void ReconcileCluster(ClusterState& state);
  std::string Hold(const UpgradeConfig& config);  // under mu_
  void CheckFailureThreshold();
  std::map<std::string, int> FailedPerVersion();  // failed upgrades by target version
  std::chrono::steady_clock::duration RealDelay(std::chrono::seconds operator_time) const;

  OperatorOptions options_;
  OperatorConfig config_;
  std::unique_ptr<StateStore> store_;
  FleetPauses pauses_;
  GaugeTable metrics_;
  std::unique_ptr<NotificationCenter> notifications_;
  env::Clock::SteadyTime started_steady_;
  TimePoint started_at_;

  std::mutex mu_;  // guards configs_ and the notes of clusters_
  std::condition_variable_any wake_;
  bool woken_ = false;
  std::map<std::string, UpgradeConfig> configs_;  // by cluster
  std::map<std::string, std::unique_ptr<ClusterState>> clusters_;
  std::unique_ptr<PolicyService> policies_;  // source OCM
  PolicyIndex policy_index_;
  std::unique_ptr<ConfigSource> source_;
};

}  // namespace cincinnati::upgrade
