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
  if (options.wrap_store) store = options.wrap_store(std::move(store));
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
      pauses_(*store_, store_.get()) {
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
  std::vector<SyncWrite> writes;
  env::Clock::SteadyTime term;
  {
    std::lock_guard lock(mu_);
    writes = PlanSync(read);
    term = replica_.role.acting_from();
  }
  // Written outside mu_, so that a store that hangs holds no API call; one at a time
  // (the store has no batch), stopping at the first Conflict.
  std::vector<bool> written;
  for (const SyncWrite& w : writes) {
    Status s = w.put ? store_->PutConfig(*w.put) : store_->DeleteConfig(w.cluster);
    written.push_back(s.ok());
    if (s.ok()) continue;
    spdlog::error("cluster {}: {} its UpgradeConfig: {} (tried again at the next sync)", w.cluster, w.put ? "saving" : "deleting", s.message());
    if (s.code() == Status::Code::kConflict) {
      StepDown(s.message());  // another replica leads
      break;
    }
  }
  std::lock_guard lock(mu_);
  ApplySync(writes, written, term);
}

std::vector<UpgradeOperator::SyncWrite> UpgradeOperator::PlanSync(SourceRead& read) {
  config_problems_.unreadable = std::move(read.problems);
  // Said once per cluster, and listed (`upgrades list`) while it lasts.
  std::set<std::string> unknown;
  for (const auto& [name, spec] : read.specs) {
    if (clusters_.count(name)) continue;
    if (!config_problems_.unknown.count(name)) {
      spdlog::warn("an UpgradeConfig names cluster {}, which is not in the fleet file: it is ignored until the fleet "
                   "file lists it", name);
    }
    unknown.insert(name);
  }
  config_problems_.unknown = std::move(unknown);
  std::vector<SyncWrite> writes;
  for (auto& [name, state] : clusters_) {
    // A cluster in a pass is left alone: the pass writes its config back when it ends.
    if (read.Unreadable(name) || state->in_flight) continue;
    auto wanted = read.specs.find(name);
    auto current = configs_.find(name);
    // What the write replaces, copied only when there is one (checked when applied).
    auto base = [&] { return current == configs_.end() ? std::nullopt : std::optional<UpgradeConfig>(current->second); };
    if (wanted == read.specs.end()) {
      if (current == configs_.end() || read.keep_unlisted) continue;
      if (IsUpgrading(current->second)) {
        state->note = "its UpgradeConfig was removed, but the upgrade is in progress: it is kept until it ends";
        continue;
      }
      writes.push_back({name, base(), std::nullopt});
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
    writes.push_back({name, base(), std::move(fresh)});
  }
  return writes;
}

void UpgradeOperator::ApplySync(std::vector<SyncWrite>& writes, const std::vector<bool>& written, env::Clock::SteadyTime term) {
  // A new term read the whole state after these writes: what it read stands.
  if (!replica_.role.Holds() || replica_.role.acting_from() != term) return;
  bool removed = false;
  for (size_t i = 0; i < written.size(); ++i) {
    if (!written[i]) continue;
    SyncWrite& w = writes[i];
    ClusterState& state = *clusters_.at(w.cluster);
    auto current = configs_.find(w.cluster);
    const bool unchanged = current == configs_.end() ? !w.base : (w.base && current->second == *w.base);
    if (state.in_flight || !unchanged) {  // cannot happen: dispatch runs on this thread (upgrade_operator.h)
      spdlog::error("cluster {}: its config changed while the source's was written: the source's is read again", w.cluster);
      continue;
    }
    if (!w.put) {
      configs_.erase(current);
      metrics_.RemoveWhere("upgradeconfig_name", w.cluster);
      spdlog::info("cluster {}: its UpgradeConfig was removed", w.cluster);
      removed = true;
      continue;
    }
    spdlog::info("cluster {}: UpgradeConfig for {} at {}", w.cluster, w.put->spec.desired.version.empty() ? w.put->spec.desired.image : w.put->spec.desired.version,
                 w.put->spec.upgrade_at);
    configs_[w.cluster] = std::move(*w.put);
    SetDue(state, {});
    state.backoff = std::chrono::seconds(0);
  }
  if (removed) WakeHeld(false);  // a wave may have lost its last unfinished config
}

void UpgradeOperator::LoadPauses() {
  if (!replica_.role.Holds()) return;
  const auto term = replica_.role.acting_from();
  {
    std::lock_guard lock(mu_);
    if (pauses_loaded_.term && *pauses_loaded_.term == term) return;
  }
  if (Status loaded = pauses_.Load(); !loaded.ok()) {
    const std::string said = "cannot read the fleet's pause (upgrades wait; read again each second): " + loaded.message();
    if (said != pauses_loaded_.said) spdlog::error("{}", said);
    pauses_loaded_.said = said;
    return;
  }
  pauses_loaded_.said.clear();
  std::lock_guard lock(mu_);
  pauses_loaded_.term = term;
  WakeHeld(true);  // held while it could not be read
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
  if (paused.status().code() == Status::Code::kConflict) StepDown(paused.status().message());  // another replica leads
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
  LoadPauses();
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
    if (leading) LoadPauses();
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
    if (auto bad = config_problems_.unreadable.find(name); bad != config_problems_.unreadable.end() && configs_.count(name)) {
      note = "its UpgradeConfig cannot be read, the last one read stays: " + bad->second + (note.empty() ? "" : "; " + note);
    }
  }
  return UpgradeConfigList(configs_, waiting_for);
}

std::optional<JsonValue> UpgradeOperator::Get(const std::string& cluster) { return FindUpgradeConfig(List(), cluster); }

std::string UpgradeOperator::UnreadableConfig(const std::string& cluster) {
  std::lock_guard lock(mu_);
  auto bad = config_problems_.unreadable.find(cluster);
  return bad == config_problems_.unreadable.end() ? "" : bad->second;
}

JsonValue UpgradeOperator::FleetStatus() {
  RefreshStandby();
  // The leader's from memory; a standby's from the store (it has no memory of it).
  auto pause = Leading() ? pauses_.InForce() : pauses_.Current();
  int upgrading = 0;
  std::map<std::string, std::string> unreadable;
  std::set<std::string> unknown;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, c] : configs_) upgrading += IsUpgrading(c) ? 1 : 0;
    unreadable = config_problems_.unreadable;
    unknown = config_problems_.unknown;
  }
  return FleetStatusDocument(pause, upgrading, config_.max_parallel, Now(), unreadable, unknown);
}

Status UpgradeOperator::Pause(const std::string& reason) {
  CINCINNATI_RETURN_IF_ERROR(RequireLeader());
  Status paused = pauses_.Pause(reason);
  if (paused.code() == Status::Code::kConflict) StepDown(paused.message());  // another replica leads
  return paused;
}

Status UpgradeOperator::Resume() {
  CINCINNATI_RETURN_IF_ERROR(RequireLeader());
  Status resumed = pauses_.Resume(FailedPerVersion());
  if (resumed.code() == Status::Code::kConflict) StepDown(resumed.message());  // another replica leads
  CINCINNATI_RETURN_IF_ERROR(resumed);
  {
    std::lock_guard lock(mu_);
    WakeHeld(true);  // the clusters the pause held need not wait an interval
  }
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
