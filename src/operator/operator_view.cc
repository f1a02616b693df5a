#include "operator/operator_view.h"

#include "http_server/metrics.h"

namespace cincinnati::upgrade {
namespace {

using kube::JsonValue;
using GaugeFamily = http_server::Family<http_server::Gauge>;
using kube::JsonObject;
using kube::JsonArray;
using kube::FindMember;
using kube::TextOf;
using kube::SetMember;
using kube::ItemsOf;

// The collector's suffix of each step's condition (none for the steps without one), as
// the managed-upgrade operator's metrics collector names them.
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

JsonValue UpgradeConfigList(const std::map<std::string, UpgradeConfig>& configs,
                            const std::map<std::string, std::string>& waiting_for) {
  JsonArray items;
  for (const auto& [name, c] : configs) {
    JsonValue item = ToJson(c);
    auto note = waiting_for.find(name);
    if (note != waiting_for.end() && !note->second.empty()) {
      JsonValue metadata = *FindMember(item, "metadata");
      SetMember(metadata, "annotations", JsonValue(JsonObject({{kWaitingForAnnotation, JsonValue(note->second)}})));
      SetMember(item, "metadata", std::move(metadata));
    }
    items.push_back(std::move(item));
  }
  return JsonValue(JsonObject({{"apiVersion", JsonValue(std::string(kApiVersion))},
                            {"kind", JsonValue("UpgradeConfigList")},
                            {"items", JsonValue(std::move(items))}}));
}

std::optional<JsonValue> FindUpgradeConfig(const JsonValue& list, const std::string& cluster) {
  const JsonValue* items = list.is_object() ? FindMember(list, "items") : nullptr;
  if (!items || !items->is_array()) return std::nullopt;
  for (const auto& item : ItemsOf(*items)) {
    const JsonValue* metadata = item.is_object() ? FindMember(item, "metadata") : nullptr;
    const JsonValue* labels = metadata && metadata->is_object() ? FindMember(*metadata, "labels") : nullptr;
    const JsonValue* name = labels && labels->is_object() ? FindMember(*labels, "cluster") : nullptr;
    if (name && name->is_string() && TextOf(*name) == cluster) return item;
  }
  return std::nullopt;
}

JsonValue FleetStatusDocument(const Result<FleetPause>& pause, int upgrading, int max_parallel, TimePoint now,
                              const std::map<std::string, std::string>& unreadable_configs,
                              const std::set<std::string>& unknown_clusters) {
  JsonValue out = JsonObject();
  if (!pause.ok()) {
    SetMember(out, "paused", JsonValue(true));
    SetMember(out, "reason", JsonValue("the fleet's pause cannot be read: " + pause.status().message()));
  } else {
    SetMember(out, "paused", JsonValue(!pause->reason.empty()));
    if (!pause->reason.empty()) SetMember(out, "reason", JsonValue(pause->reason));
    if (!pause->reason.empty() && !pause->version.empty()) SetMember(out, "version", JsonValue(pause->version));
  }
  SetMember(out, "upgrading", JsonValue(int64_t(upgrading)));
  SetMember(out, "maxParallel", JsonValue(int64_t(max_parallel)));
  SetMember(out, "now", JsonValue(FormatTime(now)));
  if (!unreadable_configs.empty()) {
    JsonValue unreadable = JsonObject();
    for (const auto& [cluster, why] : unreadable_configs) SetMember(unreadable, cluster, JsonValue(why));
    SetMember(out, "unreadableConfigs", std::move(unreadable));
  }
  if (!unknown_clusters.empty()) {
    JsonArray unknown;
    for (const std::string& cluster : unknown_clusters) unknown.emplace_back(cluster);
    SetMember(out, "unknownClusters", JsonValue(std::move(unknown)));
  }
  return out;
}

namespace {

// The collector's families, as the reference names them (no help; a family without a
// sample is left out), and our count of passes.
struct CollectorFamilies {
  explicit CollectorFamilies(http_server::Registry& r)
      : scheduled(Gauge(r, "managed_upgrade_upgrade_scheduled", WithPhase())),
        pdb_timeout(Gauge(r, "managed_upgrade_upgrade_pdb_timeout_minutes", Base())),
        started(Gauge(r, "managed_upgrade_upgrade_start_timestamp", WithPhase())),
        completed(Gauge(r, "managed_upgrade_upgrade_complete_timestamp", WithPhase())),
        reconciles(r.AddCounter("upgradeoperator_reconciles_total", "Reconcile passes of each cluster's UpgradeConfig",
                                {"upgradeconfig_name"})) {
    std::vector<std::string> with_condition = Base();
    with_condition.push_back("condition");
    for (const auto& [type, suffix] : ConditionSuffixes()) conditions[type] = &Gauge(r, "managed_upgrade_condition_" + suffix, with_condition);
  }
  static std::vector<std::string> Base() { return {"upgradeconfig_name", "version", "desired_version"}; }
  static std::vector<std::string> WithPhase() { return {"upgradeconfig_name", "version", "desired_version", "phase"}; }
  static GaugeFamily& Gauge(http_server::Registry& r, const std::string& name, std::vector<std::string> labels) {
    return r.AddGauge(name, "", std::move(labels), http_server::WhenEmpty::kHidden);
  }

  GaugeFamily &scheduled, &pdb_timeout, &started, &completed;
  std::map<std::string, GaugeFamily*> conditions;  // by condition type
  http_server::Family<http_server::Counter>& reconciles;
};

// The gauges of one config, from its history entry for the desired version (none without).
void CollectConfig(CollectorFamilies& f, const std::string& name, const UpgradeConfig& c) {
  const UpgradeHistory* h = c.FindHistory(c.spec.desired.version);
  if (!h) return;
  const std::vector<std::string> base = {name, h->preceding_version, c.spec.desired.version};
  std::vector<std::string> with_phase = base;
  with_phase.push_back(std::string(PhaseName(h->phase)));
  f.scheduled.With(with_phase).Set(UnixTime(c.spec.upgrade_at));
  f.pdb_timeout.With(base).Set(c.spec.pdb_force_drain_timeout);
  if (!h->start_time.empty()) f.started.With(with_phase).Set(UnixTime(h->start_time));
  if (!h->complete_time.empty()) f.completed.With(with_phase).Set(UnixTime(h->complete_time));
  for (const auto& condition : h->conditions) {
    auto family = f.conditions.find(condition.type);
    if (family == f.conditions.end()) continue;
    std::vector<std::string> labels = base;
    labels.push_back(condition.status);
    family->second->With(labels).Set(UnixTime(condition.status == "True" ? condition.complete_time : condition.start_time));
  }
}

}  // namespace

std::string CollectorMetrics(const std::map<std::string, UpgradeConfig>& configs,
                             const std::map<std::string, uint64_t>& passes) {
  // By name, as the reference's collector lists them; the count of passes sorts last.
  http_server::Registry registry("", http_server::Registry::Order::kName);
  CollectorFamilies families(registry);
  for (const auto& [name, c] : configs) CollectConfig(families, name, c);
  for (const auto& [name, count] : passes) families.reconciles.With({name}).Increment(static_cast<double>(count));
  return registry.Render();
}

std::map<std::string, int> ClustersPerPhase(const std::map<std::string, UpgradeConfig>& configs) {
  std::map<std::string, int> per_phase = {{"New", 0}, {"Pending", 0}, {"Upgrading", 0}, {"Upgraded", 0}, {"Failed", 0}};
  for (const auto& [name, c] : configs) {
    const UpgradeHistory* h = NewestHistory(c);
    ++per_phase[h ? std::string(PhaseName(h->phase)) : "New"];
  }
  return per_phase;
}

std::string PassMetrics(const std::map<std::string, UpgradeConfig>& configs, const std::map<std::string, PassStats>& passes) {
  http_server::Registry registry("", http_server::Registry::Order::kName);
  auto gauge = [&](const std::string& name, std::vector<std::string> labels) -> GaugeFamily& {
    return registry.AddGauge(name, "", std::move(labels), http_server::WhenEmpty::kHidden);
  };
  GaugeFamily& clusters = gauge("upgradeoperator_clusters", {"phase"});
  GaugeFamily& duration = gauge("upgradeoperator_pass_duration_seconds", {"upgradeconfig_name"});
  GaugeFamily& reconciled = gauge("upgradeoperator_last_reconcile_timestamp_seconds", {"upgradeconfig_name"});
  GaugeFamily& in_flight = gauge("upgradeoperator_passes_in_flight", {});
  for (const auto& [phase, count] : ClustersPerPhase(configs)) clusters.With({phase}).Set(count);
  int running = 0;
  for (const auto& [name, stats] : passes) {
    running += stats.in_flight ? 1 : 0;
    if (stats.last_reconciled <= 0) continue;
    duration.With({name}).Set(stats.last_pass_seconds);
    reconciled.With({name}).Set(stats.last_reconciled);
  }
  in_flight.Get().Set(running);
  return registry.Render();
}

}  // namespace cincinnati::upgrade
