#include "operator/operator_view.h"

#include <fmt/format.h>

#include "operator/operator_metrics.h"
#include "http_server/metrics.h"

namespace cincinnati::upgrade {
namespace {

using kube::JsonValue;
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
                              const std::map<std::string, std::string>& unreadable_configs) {
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
  return out;
}

std::string CollectorMetrics(const std::map<std::string, UpgradeConfig>& configs,
                             const std::map<std::string, uint64_t>& passes) {
  GaugeTable collected;
  for (const auto& [name, c] : configs) {
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
  std::string out = collected.Render();
  out += "# HELP upgradeoperator_reconciles_total Reconcile passes of each cluster's UpgradeConfig\n"
         "# TYPE upgradeoperator_reconciles_total counter\n";
  for (const auto& [name, count] : passes) {
    out += fmt::format("upgradeoperator_reconciles_total{{upgradeconfig_name=\"{}\"}} {}\n", http_server::EscapeLabel(name), count);
  }
  return out;
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
  GaugeTable out;
  for (const auto& [phase, count] : ClustersPerPhase(configs)) out.Set("upgradeoperator_clusters", {{"phase", phase}}, count);
  int in_flight = 0;
  for (const auto& [name, stats] : passes) {
    in_flight += stats.in_flight ? 1 : 0;
    if (stats.last_reconciled <= 0) continue;
    out.Set("upgradeoperator_pass_duration_seconds", {{"upgradeconfig_name", name}}, stats.last_pass_seconds);
    out.Set("upgradeoperator_last_reconcile_timestamp_seconds", {{"upgradeconfig_name", name}}, stats.last_reconciled);
  }
  out.Set("upgradeoperator_passes_in_flight", {}, in_flight);
  return out.Render();
}

}  // namespace cincinnati::upgrade
