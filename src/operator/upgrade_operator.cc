#include "operator/upgrade_operator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "env/file_system.h"
#include "http/long_polls.h"
#include "operator/agent_client.h"
#include "operator/alertmanager.h"
#include "operator/fleet_hold.h"
#include "operator/hook_runner.h"
#include "operator/operator_view.h"
#include "operator/postgres_state.h"
#include "operator/prometheus_alerts.h"
#include "operator/release_resolver.h"
#include "operator/validation.h"
#include "operator/webhook_notifier.h"

namespace cincinnati::upgrade {
namespace fs = std::filesystem;
using kube::JsonValue;

namespace {

constexpr std::chrono::seconds kMaxWatch{300};  // the agent's longest watch

ClusterPortSet MakePorts(const FleetCluster& cluster, const OperatorConfig& config, std::chrono::seconds agent_timeout,
                         http::LongPolls* watches) {
  ClusterPortSet ports;
  ports.agent = std::make_unique<HttpUpdateAgent>(AgentEndpoint{cluster.agent_url, cluster.token_file, "", agent_timeout, watches});
  if (!config.prometheus.url.empty()) {
    prometheus::Settings p;
    p.url = config.prometheus.url;
    p.token_file = config.prometheus.token_file;
    p.ca_path = config.prometheus.ca_dir;
    p.timeout = std::chrono::seconds(10);
    ports.alerts = std::make_unique<PrometheusAlerts>(p);
  }
  if (!config.alertmanager.url.empty()) {
    ports.windows = std::make_unique<AlertmanagerWindows>(
        AlertmanagerSettings{config.alertmanager.url, config.alertmanager.token_file, config.alertmanager.ca_dir, std::chrono::seconds(10)});
  }
  ports.resolver = std::make_unique<RegistryReleaseResolver>();
  ports.graph = std::make_unique<HttpGraphClient>();
  ports.hooks = std::make_unique<ProcessHookRunner>();
  return ports;
}

// The agent as a pass sees it: it commands only while this replica leads, checked just
// before each command, so that a pass still running on a deposed leader commands nothing.
class LeaderOnlyAgent final : public UpdateAgent {
 public:
  LeaderOnlyAgent(UpdateAgent& agent, const UpgradeOperator& op) : agent_(agent), op_(op) {}
  Result<AgentSnapshot> Snapshot() override { return agent_.Snapshot(); }
  Status SetChannel(const std::string& channel) override {
    if (!op_.Acting()) return Status::Conflict("this replica does not lead: no command");
    return agent_.SetChannel(channel);
  }
  Status SetDesiredUpdate(const std::string& version, const std::string& image) override {
    if (!op_.Acting()) return Status::Conflict("this replica does not lead: no command");
    return agent_.SetDesiredUpdate(version, image);
  }
  bool Watch(int64_t seen, std::chrono::seconds timeout, std::function<void(bool changed)> done) override {
    return agent_.Watch(seen, timeout, std::move(done));
  }

 private:
  UpdateAgent& agent_;
  const UpgradeOperator& op_;
};

}  // namespace

Result<std::unique_ptr<UpgradeOperator>> UpgradeOperator::Open(OperatorOptions options) {
  OperatorConfig config;
  if (!options.config_path.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(config, LoadOperatorConfig(options.config_path));
  }
  if (!options.configs_dir.empty()) {
    config.local_config_dir = options.configs_dir;
    config.source = "LOCAL";
  }
  if (config.source == "LOCAL" && config.local_config_dir.empty()) {
    return Status::InvalidArgument("no UpgradeConfig directory: give --configs DIR or configManager.localConfigDir");
  }
  if (options.fleet_path.empty()) return Status::InvalidArgument("--fleet FILE is required (the clusters to manage)");
  if (options.workers < 1 || options.call_threads < 1) return Status::InvalidArgument("--workers and --call-threads: at least 1");
  if (options.agent_timeout.count() < 1) return Status::InvalidArgument("--agent-timeout: at least 1 second");
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<FleetCluster> fleet, LoadFleet(options.fleet_path));
  if (options.replica_name.empty()) options.replica_name = DefaultReplicaName();
  std::unique_ptr<StateStore> store;
  std::unique_ptr<Leadership> leadership;
  if (!options.postgres_url.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(PostgresState shared, OpenPostgresState(options.postgres_url, options.replica_name));
    store = std::move(shared.store);
    leadership = std::move(shared.leadership);
  } else {
    if (options.state_dir.empty()) return Status::InvalidArgument("--state-dir DIR or --state.postgres URL is required");
    CINCINNATI_RETURN_IF_ERROR(env::DefaultFileSystem().CreateDirectories(options.state_dir).WithContext("--state-dir"));
    CINCINNATI_ASSIGN_OR_RETURN(store, StateStore::Open((fs::path(options.state_dir) / "state.db").string()));
    CINCINNATI_ASSIGN_OR_RETURN(leadership, LockFileLeadership((fs::path(options.state_dir) / "operator.lock").string(), options.replica_name));
  }
  // The saved state is read when this replica leads (TakeOver), or when its API is asked
  // while it stands by (RefreshStandby).
  return std::unique_ptr<UpgradeOperator>(
      new UpgradeOperator(std::move(options), std::move(config), std::move(fleet), std::move(store), std::move(leadership)));
}

UpgradeOperator::UpgradeOperator(OperatorOptions options, OperatorConfig config, std::vector<FleetCluster> fleet,
                                 std::unique_ptr<StateStore> store, std::unique_ptr<Leadership> leadership)
    : options_(std::move(options)),
      config_(std::move(config)),
      store_(std::move(store)),
      replica_{.leadership = std::move(leadership), .role = {}, .election_said = {}, .standby_read = {}},
      pauses_(*store_) {
  SetLeaderMetric(false);
  started_.steady = options_.clock->Steady();
  started_.at = options_.testing_now.value_or(options_.clock->Now());
  std::vector<std::unique_ptr<Notifier>> notifiers;
  for (const auto& w : config_.webhooks) {
    notifiers.push_back(std::make_unique<WebhookNotifier>(WebhookSettings{w.url, w.token_file, "", w.headers, std::chrono::seconds(10)}));
  }
  if (config_.source == "OCM") {
    policies_ = std::make_unique<PolicyService>(config_.ocm_base_url, HttpPeer{config_.ocm_token_file, "", std::chrono::seconds(10), {}});
    notifiers.push_back(std::make_unique<PolicyStateNotifier>(*policies_, policy_index_));
  }
  notifications_ = std::make_unique<NotificationCenter>(*store_, metrics_, std::move(notifiers));
  call_runner_ = std::make_unique<CallRunner>(options_.call_threads);
  agent_watches_ = std::make_unique<http::LongPolls>(size_t{4} << 20);  // a watch event: one ClusterVersion
  pass_pool_ = std::make_unique<CallRunner>(options_.workers);
  std::vector<std::string> names;
  for (auto& c : fleet) {
    auto state = std::make_unique<ClusterState>();
    state->ports = options_.make_ports ? options_.make_ports(c, config_) : MakePorts(c, config_, options_.agent_timeout, agent_watches_.get());
    ClusterState* raw = state.get();
    state->calls = std::make_unique<PendingCalls>(call_runner_.get(), [this, raw] { CallEnded(*raw); }, [this] { return Acting(); });
    state->cluster = c;
    names.push_back(c.name);
    SetDue(*state, {});  // a first pass at once
    clusters_[c.name] = std::move(state);
  }
  if (policies_) {
    // The map of clusters never changes after Open: its ports outlive the source.
    // A cluster's id never changes: its agent is asked once (the source reads on the
    // operator's loop, where a hanging agent would hold every dispatch).
    auto known = std::make_shared<std::pair<std::mutex, std::map<std::string, std::string>>>();
    auto cluster_id = [this, known](const std::string& name) -> Result<std::string> {
      {
        std::lock_guard lock(known->first);
        if (auto it = known->second.find(name); it != known->second.end()) return it->second;
      }
      CINCINNATI_ASSIGN_OR_RETURN(AgentSnapshot agent, clusters_.at(name)->ports.agent->Snapshot());
      if (!agent.cluster_id.empty()) {
        std::lock_guard lock(known->first);
        known->second[name] = agent.cluster_id;
      }
      return agent.cluster_id;
    };
    source_ = std::make_unique<OcmConfigSource>(*policies_, policy_index_, config_.upgrade_type, std::move(names), cluster_id,
                                                *options_.clock, RealDelay(std::chrono::minutes(config_.watch_interval_minutes)));
  } else {
    source_ = std::make_unique<LocalConfigSource>(config_.local_config_dir);
  }
}

UpgradeOperator::~UpgradeOperator() {
  // Passes first (they start calls and watches), then the watches and calls: all use
  // everything else.
  pass_pool_.reset();
  agent_watches_.reset();
  call_runner_.reset();
}

TimePoint UpgradeOperator::Now() const {
  if (!options_.testing_now && options_.time_scale == 1.0) return options_.clock->Now();
  const auto elapsed = std::chrono::duration<double>(options_.clock->Steady() - started_.steady).count() * options_.time_scale;
  return started_.at + std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(elapsed));
}

std::chrono::steady_clock::duration UpgradeOperator::RealDelay(std::chrono::seconds operator_time) const {
  const double scale = options_.time_scale > 0 ? options_.time_scale : 1.0;
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(operator_time.count() / scale));
}

void UpgradeOperator::SyncSource() {
  SourceRead read = source_->Read();
  if (read.refreshed && policies_) {
    metrics_.Set("upgradeoperator_upgradeconfig_sync_timestamp", {{"source", "OCM"}},
                 static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(Now().time_since_epoch()).count()));
  }
  if (read.Unreadable("*")) return;
  std::lock_guard lock(mu_);
  unreadable_configs_ = std::move(read.problems);
  for (const auto& [name, spec] : read.specs) {
    if (!clusters_.count(name)) spdlog::warn("an UpgradeConfig names cluster {}, which is not in the fleet file", name);
  }
  for (auto& [name, state] : clusters_) {
    // A cluster in a pass is left alone: the pass writes its config back when it ends.
    if (read.Unreadable(name) || state->in_flight) continue;
    auto wanted = read.specs.find(name);
    auto current = configs_.find(name);
    if (wanted == read.specs.end()) {
      if (current == configs_.end() || read.keep_unlisted) continue;
      if (IsUpgrading(current->second)) {
        state->note = "its UpgradeConfig was removed, but the upgrade is in progress: it is kept until it ends";
        continue;
      }
      if (Status s = store_->DeleteConfig(name); !s.ok()) {
        spdlog::error("cluster {}: {}", name, s.message());
        continue;
      }
      configs_.erase(current);
      metrics_.RemoveWhere("upgradeconfig_name", name);
      spdlog::info("cluster {}: its UpgradeConfig was removed", name);
      continue;
    }
    if (current != configs_.end() && current->second.spec == wanted->second) continue;
    if (current != configs_.end() && IsUpgrading(current->second)) {
      state->note = "a changed UpgradeConfig waits: the upgrade in progress is not replaced";
      continue;
    }
    UpgradeConfig fresh;
    fresh.cluster = name;
    fresh.spec = wanted->second;
    if (Status s = store_->PutConfig(fresh); !s.ok()) {
      spdlog::error("cluster {}: {}", name, s.message());
      continue;
    }
    spdlog::info("cluster {}: UpgradeConfig for {} at {}", name, fresh.spec.desired.version.empty() ? fresh.spec.desired.image : fresh.spec.desired.version,
                 fresh.spec.upgrade_at);
    configs_[name] = std::move(fresh);
    SetDue(*state, {});
    state->backoff = std::chrono::seconds(0);
  }
}

std::string UpgradeOperator::Hold(const UpgradeConfig& config) {
  // Under mu_ (called from ReconcileCluster's pass, which holds no lock: see there).
  if (config_.failure_threshold > 0) {
    // Failures that ended in passes running now count before anyone else starts.
    auto paused = pauses_.PauseOnFailures(FailedPerVersionLocked(), config_.failure_threshold);
    if (paused.ok() && *paused) spdlog::warn("pausing the fleet's upgrades to {}: {}", (*paused)->version, (*paused)->reason);
  }
  auto pause = pauses_.Current();
  if (!pause.ok()) return "the fleet's pause cannot be read (upgrades wait): " + pause.status().message();
  return FleetHold(config, config_, *pause, configs_, [this](const std::string& cluster) -> const std::map<std::string, std::string>* {
    auto it = clusters_.find(cluster);
    return it == clusters_.end() ? nullptr : &it->second->cluster.labels;
  });
}

std::string UpgradeOperator::Admit(const UpgradeConfig& config) {
  std::string why = Hold(config);
  if (!why.empty()) return why;
  // Counts as upgrading from now on for every other cluster's hold, before its pass ends.
  auto shared_it = configs_.find(config.cluster);
  if (shared_it == configs_.end()) return "its UpgradeConfig was removed";  // not while in a pass: SyncSource waits
  UpgradeConfig& shared = shared_it->second;
  UpgradeHistory entry;
  if (const UpgradeHistory* h = NewestHistory(config)) entry = *h;
  if (Status moved = entry.MoveTo(Phase::kUpgrading); !moved.ok()) return moved.message();  // not admitted: a bug, logged
  shared.SetHistory(std::move(entry));
  return "";
}

void UpgradeOperator::ReconcileCluster(ClusterState& state) {
  if (passes_.stopping || !Leading()) {  // queued before Run() stopped or leadership went: nothing more is started
    std::lock_guard lock(mu_);
    state.in_flight = false;
    SetDue(state, state.due);  // back in the queue for a later Run()
    if (--passes_.in_flight == 0) passes_.idle.notify_all();
    return;
  }
  const auto started = std::chrono::steady_clock::now();
  UpgradeConfig config;
  {
    std::lock_guard lock(mu_);
    auto it = configs_.find(state.cluster.name);
    if (it == configs_.end()) {  // gone since it was dispatched: nothing to do
      state.in_flight = false;
      if (--passes_.in_flight == 0) passes_.idle.notify_all();
      return;
    }
    config = it->second;
  }
  PassContext pass{config_, *notifications_, metrics_, Now(), options_.clock->Now(), options_.time_scale, options_.interval,
                   [this](const UpgradeConfig& c) {
                     std::lock_guard lock(mu_);
                     return Admit(c);
                   }};
  const UpgradeConfig before = config;
  ClusterPorts ports = state.ports.view();
  LeaderOnlyAgent agent(*ports.agent, *this);
  ports.agent = &agent;
  ports.calls = state.calls.get();
  PassResult result = ReconcileOnce(config, ports, pass);
  if (!(config == before)) {
    Status saved = store_->PutConfig(config);
    if (!saved.ok()) spdlog::error("cluster {}: saving its state: {}", config.cluster, saved.message());
    if (saved.code() == Status::Code::kConflict) StepDown(saved.message());  // another replica leads
  }
  if (result.waits_on_agent) WatchAgent(state, result.agent_resource_version);
  std::chrono::seconds next = result.requeue;
  if (auto retry = state.calls->SoonestRetry(pass.now)) {
    next = std::min(next, std::chrono::ceil<std::chrono::seconds>(*retry - pass.now));
  }
  if (!result.error.ok()) {
    const auto base = std::max(options_.interval, std::chrono::seconds(1));
    state.backoff = state.backoff.count() == 0 ? base : std::min(state.backoff * 2, std::min(base * 5, std::chrono::seconds(300)));
    next = state.backoff;
    if (result.error.message() != state.last_error) spdlog::warn("cluster {}: {}", config.cluster, result.error.message());
  } else {
    state.backoff = std::chrono::seconds(0);
  }
  std::lock_guard lock(mu_);
  state.last_error = result.error.ok() ? "" : result.error.message();
  state.note = result.note;
  ++state.passes;
  state.last_pass_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  state.last_reconciled = options_.clock->Now();
  state.in_flight = false;
  auto due = state.rerun ? options_.clock->Steady() : options_.clock->Steady() + RealDelay(next);
  // A watch lasts at most kMaxWatch: the pass after it opens the next one.
  if (result.waits_on_agent) due = std::min(due, options_.clock->Steady() + kMaxWatch);
  SetDue(state, due);
  state.rerun = false;
  configs_[config.cluster] = std::move(config);
  --passes_.in_flight;
  passes_.ended = true;
  passes_.woken = true;
  passes_.wake.notify_all();
  if (passes_.in_flight == 0) passes_.idle.notify_all();
}

void UpgradeOperator::WatchAgent(ClusterState& state, int64_t seen) {
  {
    std::lock_guard lock(mu_);
    if (state.watching) return;
    state.watching = true;
  }
  // Up to one interval: when it ends without a change the regular pass is due anyway.
  const auto real = std::chrono::ceil<std::chrono::seconds>(RealDelay(options_.interval));
  const auto timeout = std::clamp(real, std::chrono::seconds(1), kMaxWatch);
  const bool started = state.ports.agent->Watch(seen, timeout, [this, &state](bool changed) {
    {
      std::lock_guard lock(mu_);
      state.watching = false;
    }
    if (changed) CallEnded(state);  // the agent moved: its next pass at once
  });
  if (!started) {
    std::lock_guard lock(mu_);
    state.watching = false;
  }
}

void UpgradeOperator::CallEnded(ClusterState& state) {
  std::lock_guard lock(mu_);
  if (state.in_flight) {
    state.rerun = true;
  } else {
    SetDue(state, options_.clock->Steady());
  }
  passes_.woken = true;
  passes_.wake.notify_all();
}

void UpgradeOperator::SetDue(ClusterState& state, env::Clock::SteadyTime due) {
  if (state.queued) passes_.due_queue.erase({state.due, &state});
  state.due = due;
  state.queued = !state.in_flight;
  if (state.queued) passes_.due_queue.insert({due, &state});
}

size_t UpgradeOperator::DispatchDue() {
  const auto now = options_.clock->Steady();
  if (!Acting()) return 0;
  size_t dispatched = 0;
  while (!passes_.due_queue.empty() && passes_.due_queue.begin()->first <= now) {
    ClusterState* state = passes_.due_queue.begin()->second;
    passes_.due_queue.erase(passes_.due_queue.begin());
    state->queued = false;
    // Without a config it waits out of the queue: SyncSource queues it when one comes.
    if (!configs_.count(state->cluster.name)) continue;
    state->in_flight = true;
    ++passes_.in_flight;
    ++dispatched;
    pass_pool_->Post([this, state] { ReconcileCluster(*state); });
  }
  return dispatched;
}

std::map<std::string, int> UpgradeOperator::FailedPerVersion() {
  std::lock_guard lock(mu_);
  return FailedPerVersionLocked();
}

std::map<std::string, int> UpgradeOperator::FailedPerVersionLocked() {
  std::map<std::string, int> failed;
  for (const auto& [name, c] : configs_) {
    const UpgradeHistory* h = NewestHistory(c);
    if (h && h->phase == Phase::kFailed) ++failed[h->version];
  }
  return failed;
}

void UpgradeOperator::CheckFailureThreshold() {
  if (config_.failure_threshold <= 0) return;
  auto paused = pauses_.PauseOnFailures(FailedPerVersion(), config_.failure_threshold);
  if (!paused.ok()) {
    // The failures still count: the next pass tries again.
    spdlog::error("cannot pause the fleet's upgrades on failures: {}; tried again at the next pass", paused.status().message());
  } else if (*paused) {
    spdlog::warn("pausing the fleet's upgrades to {}: {}", (*paused)->version, (*paused)->reason);
  }
}

void UpgradeOperator::RunOnce() {
  passes_.stopping = false;
  Elect();
  if (!Leading()) return;
  SyncSource();
  {
    std::unique_lock lock(mu_);
    DispatchDue();
    passes_.idle.wait(lock, [&] { return passes_.in_flight == 0; });
  }
  CheckFailureThreshold();
}

void UpgradeOperator::Run(std::stop_token stop) {
  passes_.stopping = false;
  // Elections on their own thread: a slow source or a busy loop never delays a renewal.
  std::jthread elector([this](std::stop_token st) {
    std::mutex m;
    std::condition_variable_any tick;
    while (!st.stop_requested()) {
      Elect();
      std::unique_lock l(m);
      tick.wait_for(l, st, kElectionPeriod, [] { return false; });
    }
  });
  auto next_sync = options_.clock->Steady();
  while (!stop.stop_requested()) {
    const bool leading = Leading();
    if (leading && options_.clock->Steady() >= next_sync) {
      SyncSource();  // at least every second, and at once when woken from outside
      next_sync = options_.clock->Steady() + std::chrono::seconds(1);
    }
    bool check_failures = false;
    std::unique_lock lock(mu_);
    if (leading) DispatchDue();
    std::swap(check_failures, passes_.ended);
    if (check_failures) {
      lock.unlock();
      CheckFailureThreshold();
      lock.lock();
    }
    const auto now = options_.clock->Steady();
    auto next = passes_.due_queue.empty() ? next_sync : std::min(next_sync, passes_.due_queue.begin()->first);
    if (!leading) next = now + kElectionPeriod;  // TakeOver wakes it at once
    next = std::max(next, replica_.role.acting_from());
    passes_.wake.wait_for(lock, stop, std::max(next - now, env::Clock::SteadyTime::duration::zero()), [&] { return passes_.woken; });
    if (passes_.sync_requested) next_sync = options_.clock->Steady();
    passes_.woken = false;
    passes_.sync_requested = false;
  }
  // Passes still running end before Run returns (they hold the cluster's state); queued
  // ones are dropped.
  // The elector keeps renewing while they end: a leader that stops still leads until then.
  {
    std::unique_lock lock(mu_);
    passes_.stopping = true;
    passes_.idle.wait(lock, [&] { return passes_.in_flight == 0; });
  }
  elector.request_stop();
  elector.join();
  // Handed over now rather than when the lease ends (the next leader still waits out the
  // calls this one may have started).
  if (replica_.role.StepDown()) {
    replica_.leadership->Release();
    SetLeaderMetric(false);
  }
}

void UpgradeOperator::Wake() {
  std::lock_guard lock(mu_);
  passes_.woken = true;
  passes_.sync_requested = true;
  passes_.wake.notify_all();
}

JsonValue UpgradeOperator::List() {
  RefreshStandby();
  std::lock_guard lock(mu_);
  std::map<std::string, std::string> waiting_for;
  for (const auto& [name, state] : clusters_) {
    std::string& note = waiting_for[name] = state->last_error.empty() ? state->note : state->last_error;
    if (auto bad = unreadable_configs_.find(name); bad != unreadable_configs_.end() && configs_.count(name)) {
      note = "its UpgradeConfig cannot be read, the last one read stays: " + bad->second + (note.empty() ? "" : "; " + note);
    }
  }
  return UpgradeConfigList(configs_, waiting_for);
}

std::optional<JsonValue> UpgradeOperator::Get(const std::string& cluster) { return FindUpgradeConfig(List(), cluster); }

std::string UpgradeOperator::UnreadableConfig(const std::string& cluster) {
  std::lock_guard lock(mu_);
  auto bad = unreadable_configs_.find(cluster);
  return bad == unreadable_configs_.end() ? "" : bad->second;
}

JsonValue UpgradeOperator::FleetStatus() {
  RefreshStandby();
  auto pause = pauses_.Current();
  int upgrading = 0;
  std::map<std::string, std::string> unreadable;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, c] : configs_) upgrading += IsUpgrading(c) ? 1 : 0;
    unreadable = unreadable_configs_;
  }
  return FleetStatusDocument(pause, upgrading, config_.max_parallel, Now(), unreadable);
}

Status UpgradeOperator::Pause(const std::string& reason) {
  CINCINNATI_RETURN_IF_ERROR(RequireLeader());
  return pauses_.Pause(reason);
}

Status UpgradeOperator::Resume() {
  CINCINNATI_RETURN_IF_ERROR(RequireLeader());
  CINCINNATI_RETURN_IF_ERROR(pauses_.Resume(FailedPerVersion()));
  Wake();
  return Status::OK();
}

std::map<std::string, int> UpgradeOperator::ClustersPerPhase() {
  RefreshStandby();
  std::lock_guard lock(mu_);
  return upgrade::ClustersPerPhase(configs_);
}

std::string UpgradeOperator::Metrics() {
  RefreshStandby();
  std::map<std::string, uint64_t> passes;
  std::map<std::string, PassStats> stats;
  std::string collected;
  {
    // Rendered under the lock rather than from a copy of every config, at each scrape.
    std::lock_guard lock(mu_);
    for (const auto& [name, state] : clusters_) {
      passes[name] = state->passes;
      const double reconciled = state->passes == 0 ? 0 : std::chrono::duration<double>(state->last_reconciled.time_since_epoch()).count();
      stats[name] = {state->last_pass_seconds, reconciled, state->in_flight};
    }
    collected = CollectorMetrics(configs_, passes) + PassMetrics(configs_, stats);
  }
  return metrics_.Render() + collected;
}

}  // namespace cincinnati::upgrade
