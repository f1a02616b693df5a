#include "operator/upgrade_operator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "env/file_system.h"
#include "operator/agent_client.h"
#include "operator/alertmanager.h"
#include "operator/fleet_hold.h"
#include "operator/hook_runner.h"
#include "operator/prometheus_alerts.h"
#include "operator/release_resolver.h"
#include "operator/validation.h"
#include "operator/webhook_notifier.h"
#include "server/metrics.h"

namespace cincinnati::upgrade {
namespace fs = std::filesystem;
using kube::JsonValue;

namespace {

constexpr char kWaitingFor[] = "upgrade.cincinnati.openshift.io/waiting-for";

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

using SourceRead = UpgradeOperator::SourceRead;

// The UpgradeConfig files of a LOCAL source: cluster name -> spec (a file is for the
// cluster its metadata.labels.cluster names, else its file name without extension).
// Every entry named *.yaml, *.yml or *.json is a config: one that cannot be read (not
// a regular file, a symlink loop, over the size limit, invalid) leaves its cluster's
// config as it is, and is never taken for a deletion. `file_clusters` remembers which
// cluster each file named when it last read, so an unreadable file keeps the cluster it
// is for even when that comes from its labels; one never read whole since the operator
// started stops every deletion until it reads. Never throws.
SourceRead ReadLocalSource(const std::string& dir, std::map<std::string, std::string>& file_clusters) {
  SourceRead out;
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string ext = it->path().extension().string();
    if (ext == ".yaml" || ext == ".yml" || ext == ".json") files.push_back(it->path());
  }
  if (ec) {
    spdlog::error("upgrade configs {}: {} (every cluster's config stays as it is)", dir, ec.message());
    out.unreadable.push_back("*");
    return out;
  }
  std::sort(files.begin(), files.end());
  std::map<std::string, std::string> seen;  // file -> cluster, this read
  for (const auto& file : files) {
    const std::string stem = file.stem().string();
    auto text = env::ReadFile(file, kMaxUpgradeConfigFileBytes);
    auto config = text.ok() ? ParseUpgradeConfigYaml(*text, file.string()) : Result<UpgradeConfig>(text.status());
    if (!config.ok()) {
      spdlog::error("{} (the cluster's previous config stays)", config.status().message());
      out.unreadable.push_back(stem);
      if (auto known = file_clusters.find(file.string()); known != file_clusters.end()) {
        out.unreadable.push_back(known->second);
        seen[file.string()] = known->second;
      } else {
        out.keep_unlisted = true;
      }
      continue;
    }
    const std::string cluster = config->cluster.empty() ? stem : config->cluster;
    seen[file.string()] = cluster;
    if (!out.specs.emplace(cluster, config->spec).second) {
      spdlog::error("{}: a second config for cluster {} is ignored", file.string(), cluster);
    }
  }
  file_clusters = std::move(seen);
  return out;
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
    : options_(std::move(options)), config_(std::move(config)), store_(std::move(store)) {
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
  for (auto& c : fleet) {
    auto state = std::make_unique<ClusterState>();
    state->ports = options_.make_ports ? options_.make_ports(c, config_) : MakePorts(c, config_);
    state->cluster = c;
    clusters_[c.name] = std::move(state);
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

UpgradeOperator::SourceRead UpgradeOperator::ReadPolicies() {
  SourceRead out;
  for (auto& entry : clusters_) {  // the map itself never changes after Open
    const std::string& name = entry.first;  // a named reference: clang cannot capture bindings
    ClusterState& cluster = *entry.second;
    auto fail = [&](const Status& s) {
      spdlog::warn("cluster {}: the upgrade-policy service: {} (its config stays as it is)", name, s.message());
      out.unreadable.push_back(name);
    };
    auto agent = cluster.ports.agent->Snapshot();
    if (!agent.ok()) {
      fail(agent.status());
      continue;
    }
    auto remote = policies_->FindCluster(agent->cluster_id);
    if (!remote.ok()) {
      fail(remote.status());
      continue;
    }
    auto policies = policies_->Policies(remote->id);
    if (!policies.ok()) {
      fail(policies.status());
      continue;
    }
    auto policy = ActionablePolicy(*policies);
    if (!policy) continue;  // nothing to do: an existing config goes
    policy_index_.Set(name, remote->id, policy->id);
    out.specs[name] = SpecFromPolicy(*remote, *policy, config_.upgrade_type);
  }
  return out;
}

void UpgradeOperator::SyncSource() {
  SourceRead read;
  if (policies_) {
    const auto now = options_.clock->Steady();
    if (next_policy_sync_ && now < *next_policy_sync_) {
      read = last_policies_;
    } else {
      read = ReadPolicies();
      last_policies_ = read;
      next_policy_sync_ = now + RealDelay(std::chrono::minutes(config_.watch_interval_minutes));
      metrics_.Set("upgradeoperator_upgradeconfig_sync_timestamp", {{"source", "OCM"}},
                   static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(Now().time_since_epoch()).count()));
    }
  } else {
    read = ReadLocalSource(config_.local_config_dir, file_clusters_);
  }
  if (std::find(read.unreadable.begin(), read.unreadable.end(), "*") != read.unreadable.end()) return;
  std::lock_guard lock(mu_);
  for (const auto& [name, spec] : read.specs) {
    if (!clusters_.count(name)) spdlog::warn("an UpgradeConfig names cluster {}, which is not in the fleet file", name);
  }
  for (auto& [name, state] : clusters_) {
    if (std::find(read.unreadable.begin(), read.unreadable.end(), name) != read.unreadable.end()) continue;
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
  FleetPause pause;
  if (auto reason = store_->GetFlag("pause.reason"); reason.ok() && *reason) {
    pause.reason = (*reason)->empty() ? "(no reason given)" : **reason;
    // A version that cannot be read holds every upgrade, as a pause without one does.
    if (auto version = store_->GetFlag("pause.version"); version.ok() && *version) pause.version = **version;
  }
  return FleetHold(config, config_, pause, configs_, [this](const std::string& cluster) -> const std::map<std::string, std::string>* {
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
  for (const auto& [version, count] : FailedPerVersion()) {
    auto acknowledged = store_->GetFlag("pause.acknowledged." + version);
    const int seen = acknowledged.ok() && *acknowledged ? std::atoi((*acknowledged)->c_str()) : 0;
    auto paused = store_->GetFlag("pause.reason");
    if (count - seen >= config_.failure_threshold && paused.ok() && !*paused) {
      const std::string reason = fmt::format("{} upgrade(s) to {} failed (fleet.failureThreshold {})", count - seen, version, config_.failure_threshold);
      // The reason last: it is what holds the fleet, so it is never there without the
      // version. A failed write is tried again at the next pass (the count still holds).
      Status saved = store_->SetFlag("pause.version", version);
      if (saved.ok()) saved = store_->SetFlag("pause.reason", reason);
      if (!saved.ok()) {
        spdlog::error("cannot pause the fleet's upgrades to {} ({}): {}; tried again at the next pass", version, reason,
                      saved.message());
        continue;
      }
      spdlog::warn("pausing the fleet's upgrades to {}: {}", version, reason);
    }
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
  std::vector<JsonValue> items;
  for (const auto& [name, c] : configs_) {
    JsonValue item = ToJson(c);
    const auto& state = *clusters_.at(name);
    std::string note = state.last_error.empty() ? state.note : state.last_error;
    if (!note.empty()) {
      JsonValue metadata = *item.Find("metadata");
      metadata.Set("annotations", JsonValue::Object({{kWaitingFor, JsonValue::String(note)}}));
      item.Set("metadata", std::move(metadata));
    }
    items.push_back(std::move(item));
  }
  return JsonValue::Object({{"apiVersion", JsonValue::String(std::string(kApiVersion))},
                            {"kind", JsonValue::String("UpgradeConfigList")},
                            {"items", JsonValue::Array(std::move(items))}});
}

std::optional<JsonValue> UpgradeOperator::Get(const std::string& cluster) {
  JsonValue list = List();
  for (const auto& item : list.Find("items")->items()) {
    const JsonValue* labels = item.Find("metadata")->Find("labels");
    if (labels && labels->Find("cluster") && labels->Find("cluster")->text() == cluster) return item;
  }
  return std::nullopt;
}

JsonValue UpgradeOperator::FleetStatus() {
  auto reason = store_->GetFlag("pause.reason");
  auto version = store_->GetFlag("pause.version");
  int upgrading = 0;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, c] : configs_) upgrading += IsUpgrading(c) ? 1 : 0;
  }
  JsonValue out = JsonValue::Object();
  out.Set("paused", JsonValue::Bool(reason.ok() && reason->has_value()));
  if (reason.ok() && *reason) out.Set("reason", JsonValue::String(**reason));
  if (version.ok() && *version && !(*version)->empty()) out.Set("version", JsonValue::String(**version));
  out.Set("upgrading", JsonValue::Integer(upgrading));
  out.Set("maxParallel", JsonValue::Integer(config_.max_parallel));
  out.Set("now", JsonValue::String(FormatTime(Now())));
  return out;
}

Status UpgradeOperator::Pause(const std::string& reason) {
  CINCINNATI_RETURN_IF_ERROR(store_->SetFlag("pause.version", ""));
  return store_->SetFlag("pause.reason", reason.empty() ? "paused by an administrator" : reason);
}

Status UpgradeOperator::Resume() {
  // Failures seen so far are acknowledged: only new ones count towards the threshold.
  for (const auto& [version, count] : FailedPerVersion()) {
    CINCINNATI_RETURN_IF_ERROR(store_->SetFlag("pause.acknowledged." + version, std::to_string(count)));
  }
  CINCINNATI_RETURN_IF_ERROR(store_->ClearFlag("pause.version"));
  CINCINNATI_RETURN_IF_ERROR(store_->ClearFlag("pause.reason"));
  Wake();
  return Status::OK();
}

namespace {

// §8.2's collector suffix of each step's condition (none for the steps without one).
const std::map<std::string, std::string>& ConditionSuffixes() {
  static const std::map<std::string, std::string> kSuffixes = {
      {"StartedNotificationSent", "notification_start_timestamp"},
      {"ClusterHealthyBeforeUpgrade", "health_check_timestamp"},
      {"ExternalDependenciesAvailable", "external_dep_check_timestamp"},
      {"ComputeCapacityReserved", "capacity_added_timestamp"},
      {"ControlPlaneMaintenanceWindowCreated", "control_plane_maint_start_timestamp"},
      {"UpgradeCommenced", "control_plane_upgrade_start_timestamp"},
      {"ControlPlaneUpgraded", "control_plane_completion_timestamp"},
      {"ControlPlaneMaintenanceWindowRemoved", "control_plane_maint_removed_timestamp"},
      {"WorkersMaintenanceWindowCreated", "workers_maint_start_timestamp"},
      {"WorkerNodesUpgraded", "workers_upgraded_timestamp"},
      {"ComputeCapacityRemoved", "capacity_removed_timestamp"},
      {"WorkersMaintenanceWindowRemoved", "workers_maint_removed_timestamp"},
      {"ClusterHealthyAfterUpgrade", "post_upgrade_healthcheck_timestamp"},
      {"CompletedNotificationSent", "notification_complete_timestamp"},
  };
  return kSuffixes;
}

double UnixTime(const std::string& text) {
  auto t = ParseTime(text);
  return t.ok() ? static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(t->time_since_epoch()).count()) : 0;
}

}  // namespace

// The gauges of the reference's collector (§8.2), computed from the configs at scrape
// time, with the cluster's name added (one operator serves a fleet).
std::string UpgradeOperator::Metrics() {
  GaugeTable collected;
  std::string passes = "# HELP upgradeoperator_reconciles_total Reconcile passes of each cluster's UpgradeConfig\n"
                       "# TYPE upgradeoperator_reconciles_total counter\n";
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, state] : clusters_) {
      passes += fmt::format("upgradeoperator_reconciles_total{{upgradeconfig_name=\"{}\"}} {}\n", server::EscapeLabel(name),
                            state->passes);
    }
    for (const auto& [name, c] : configs_) {
      const UpgradeHistory* h = c.FindHistory(c.spec.desired.version);
      if (!h) continue;  // nothing is emitted without a history entry
      const Labels base = {{"upgradeconfig_name", name}, {"version", h->preceding_version}, {"desired_version", c.spec.desired.version}};
      Labels with_phase = base;
      with_phase.push_back({"phase", std::string(PhaseName(h->phase))});
      collected.Set("managed_upgrade_upgrade_scheduled", with_phase, UnixTime(c.spec.upgrade_at));
      collected.Set("managed_upgrade_upgrade_pdb_timeout_minutes", base, c.spec.pdb_force_drain_timeout);
      if (!h->start_time.empty()) collected.Set("managed_upgrade_upgrade_start_timestamp", with_phase, UnixTime(h->start_time));
      if (!h->complete_time.empty()) collected.Set("managed_upgrade_upgrade_complete_timestamp", with_phase, UnixTime(h->complete_time));
      for (const auto& condition : h->conditions) {
        auto suffix = ConditionSuffixes().find(condition.type);
        if (suffix == ConditionSuffixes().end()) continue;
        Labels labels = base;
        labels.push_back({"condition", condition.status});
        collected.Set("managed_upgrade_condition_" + suffix->second, labels,
                      UnixTime(condition.status == "True" ? condition.complete_time : condition.start_time));
      }
    }
  }
  return metrics_.Render() + collected.Render() + passes;
}

}  // namespace cincinnati::upgrade
