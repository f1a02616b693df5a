#include "operator/upgrade_operator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "operator/agent_client.h"
#include "operator/alertmanager.h"
#include "operator/fleet_hold.h"
#include "operator/hook_runner.h"
#include "operator/operator_view.h"
#include "operator/prometheus_alerts.h"
#include "operator/release_resolver.h"
#include "operator/validation.h"
#include "operator/webhook_notifier.h"

namespace cincinnati::upgrade {
namespace fs = std::filesystem;
using kube::JsonValue;

namespace {

ClusterPortSet MakePorts(const FleetCluster& cluster, const OperatorConfig& config) {
  ClusterPortSet ports;
  ports.agent = std::make_unique<HttpUpdateAgent>(AgentEndpoint{cluster.agent_url, cluster.token_file, "", std::chrono::seconds(10)});
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
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<FleetCluster> fleet, LoadFleet(options.fleet_path));
  std::error_code ec;
  fs::create_directories(options.state_dir, ec);
  if (ec) return Status::IoError(fmt::format("--state-dir {}: {}", options.state_dir, ec.message()));
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<StateStore> store, StateStore::Open((fs::path(options.state_dir) / "state.db").string()));
  std::unique_ptr<UpgradeOperator> op(new UpgradeOperator(std::move(options), std::move(config), std::move(fleet), std::move(store)));
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<UpgradeConfig> saved, op->store_->LoadConfigs());
  for (auto& c : saved) {
    if (op->clusters_.count(c.cluster)) op->configs_[c.cluster] = std::move(c);
  }
  return op;
}

UpgradeOperator::UpgradeOperator(OperatorOptions options, OperatorConfig config, std::vector<FleetCluster> fleet,
                                 std::unique_ptr<StateStore> store)
    : options_(std::move(options)), config_(std::move(config)), store_(std::move(store)), pauses_(*store_) {
  started_steady_ = options_.clock->Steady();
  started_at_ = options_.testing_now.value_or(options_.clock->Now());
  std::vector<std::unique_ptr<Notifier>> notifiers;
  for (const auto& w : config_.webhooks) {
    notifiers.push_back(std::make_unique<WebhookNotifier>(WebhookSettings{w.url, w.token_file, "", w.headers, std::chrono::seconds(10)}));
  }
  if (config_.source == "OCM") {
    policies_ = std::make_unique<PolicyService>(config_.ocm_base_url, HttpPeer{config_.ocm_token_file, "", std::chrono::seconds(10), {}});
    notifiers.push_back(std::make_unique<PolicyStateNotifier>(*policies_, policy_index_));
  }
  notifications_ = std::make_unique<NotificationCenter>(*store_, metrics_, std::move(notifiers));
  std::vector<std::string> names;
  for (auto& c : fleet) {
    auto state = std::make_unique<ClusterState>();
    state->ports = options_.make_ports ? options_.make_ports(c, config_) : MakePorts(c, config_);
    state->cluster = c;
    names.push_back(c.name);
    clusters_[c.name] = std::move(state);
  }
  if (policies_) {
    // The map of clusters never changes after Open: its ports outlive the source.
    auto cluster_id = [this](const std::string& name) -> Result<std::string> {
      CINCINNATI_ASSIGN_OR_RETURN(AgentSnapshot agent, clusters_.at(name)->ports.agent->Snapshot());
      return agent.cluster_id;
    };
    source_ = std::make_unique<OcmConfigSource>(*policies_, policy_index_, config_.upgrade_type, std::move(names), cluster_id,
                                                *options_.clock, RealDelay(std::chrono::minutes(config_.watch_interval_minutes)));
  } else {
    source_ = std::make_unique<LocalConfigSource>(config_.local_config_dir);
  }
}

TimePoint UpgradeOperator::Now() const {
  if (!options_.testing_now && options_.time_scale == 1.0) return options_.clock->Now();
  const auto elapsed = std::chrono::duration<double>(options_.clock->Steady() - started_steady_).count() * options_.time_scale;
  return started_at_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(elapsed));
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
  for (const auto& [name, spec] : read.specs) {
    if (!clusters_.count(name)) spdlog::warn("an UpgradeConfig names cluster {}, which is not in the fleet file", name);
  }
  for (auto& [name, state] : clusters_) {
    if (read.Unreadable(name)) continue;
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
    state->due = {};
    state->backoff = std::chrono::seconds(0);
  }
}

std::string UpgradeOperator::Hold(const UpgradeConfig& config) {
  // Under mu_ (called from ReconcileCluster's pass, which holds no lock: see there).
  auto pause = pauses_.Current();
  if (!pause.ok()) return "the fleet's pause cannot be read (upgrades wait): " + pause.status().message();
  return FleetHold(config, config_, *pause, configs_, [this](const std::string& cluster) -> const std::map<std::string, std::string>* {
    auto it = clusters_.find(cluster);
    return it == clusters_.end() ? nullptr : &it->second->cluster.labels;
  });
}

void UpgradeOperator::ReconcileCluster(ClusterState& state) {
  UpgradeConfig config;
  {
    std::lock_guard lock(mu_);
    config = configs_.at(state.cluster.name);
  }
  PassContext pass{config_, *notifications_, metrics_, Now(), options_.clock->Now(), options_.time_scale, options_.interval,
                   [this](const UpgradeConfig& c) {
                     std::lock_guard lock(mu_);
                     return Hold(c);
                   }};
  const UpgradeConfig before = config;
  PassResult result = ReconcileOnce(config, state.ports.view(), pass);
  if (!(config == before)) {
    if (Status s = store_->PutConfig(config); !s.ok()) spdlog::error("cluster {}: saving its state: {}", config.cluster, s.message());
  }
  std::chrono::seconds next = result.requeue;
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
  state.due = options_.clock->Steady() + RealDelay(next);
  configs_[config.cluster] = std::move(config);
}

std::map<std::string, int> UpgradeOperator::FailedPerVersion() {
  std::lock_guard lock(mu_);
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
  SyncSource();
  std::vector<ClusterState*> due;
  {
    std::lock_guard lock(mu_);
    const auto now = options_.clock->Steady();
    for (auto& [name, state] : clusters_) {
      if (configs_.count(name) && state->due <= now) due.push_back(state.get());
    }
  }
  // One cluster after the other, so that the fleet's holds see each start at once.
  for (ClusterState* state : due) ReconcileCluster(*state);
  CheckFailureThreshold();
}

void UpgradeOperator::Run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    RunOnce();
    std::unique_lock lock(mu_);
    const auto now = options_.clock->Steady();
    auto next = now + std::chrono::seconds(1);  // the source is re-read at least every second
    for (const auto& [name, state] : clusters_) {
      if (configs_.count(name)) next = std::min(next, state->due);
    }
    wake_.wait_for(lock, stop, std::max(next - now, env::Clock::SteadyTime::duration::zero()), [&] { return woken_; });
    woken_ = false;
  }
}

void UpgradeOperator::Wake() {
  std::lock_guard lock(mu_);
  woken_ = true;
  wake_.notify_all();
}

JsonValue UpgradeOperator::List() {
  std::lock_guard lock(mu_);
  std::map<std::string, std::string> waiting_for;
  for (const auto& [name, state] : clusters_) waiting_for[name] = state->last_error.empty() ? state->note : state->last_error;
  return UpgradeConfigList(configs_, waiting_for);
}

std::optional<JsonValue> UpgradeOperator::Get(const std::string& cluster) { return FindUpgradeConfig(List(), cluster); }

JsonValue UpgradeOperator::FleetStatus() {
  auto pause = pauses_.Current();
  int upgrading = 0;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, c] : configs_) upgrading += IsUpgrading(c) ? 1 : 0;
  }
  return FleetStatusDocument(pause, upgrading, config_.max_parallel, Now());
}

Status UpgradeOperator::Pause(const std::string& reason) { return pauses_.Pause(reason); }

Status UpgradeOperator::Resume() {
  CINCINNATI_RETURN_IF_ERROR(pauses_.Resume(FailedPerVersion()));
  Wake();
  return Status::OK();
}

std::string UpgradeOperator::Metrics() {
  std::map<std::string, uint64_t> passes;
  std::string collected;
  {
    // Rendered under the lock rather than from a copy of every config, at each scrape.
    std::lock_guard lock(mu_);
    for (const auto& [name, state] : clusters_) passes[name] = state->passes;
    collected = CollectorMetrics(configs_, passes);
  }
  return metrics_.Render() + collected;
}

}  // namespace cincinnati::upgrade
