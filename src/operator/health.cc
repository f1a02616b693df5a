#include "operator/health.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <set>

namespace cincinnati::upgrade {
namespace {

constexpr char kMetric[] = "upgradeoperator_healthcheck_failed";

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

void Record(GaugeTable& metrics, const HealthLabels& l, const std::string& reason, bool failed) {
  metrics.Set(kMetric, {{"upgradeconfig_name", l.cluster}, {"state", l.state}, {"version", l.version}, {"reason", reason}},
              failed ? 1 : 0);
}

}  // namespace

std::vector<std::string> CountedCriticalAlerts(const std::vector<FiringAlert>& alerts, const OperatorConfig& config,
                                               const std::string& cluster) {
  static const RE2 kPlatform("^openshift.*|^kube-.*|^default$");
  const std::string& label = config.prometheus.cluster_label;
  std::set<std::string> names;
  for (const auto& a : alerts) {
    if (a.severity != "critical") continue;
    if (!RE2::PartialMatch(a.namespace_, kPlatform)) continue;
    if (std::find(config.ignored_namespaces.begin(), config.ignored_namespaces.end(), a.namespace_) != config.ignored_namespaces.end()) continue;
    if (std::find(config.ignored_criticals.begin(), config.ignored_criticals.end(), a.name) != config.ignored_criticals.end()) continue;
    if (!label.empty()) {
      auto it = a.labels.find(label);
      if (it != a.labels.end() && it->second != cluster) continue;  // another cluster's alert
    }
    names.insert(a.name);
  }
  return {names.begin(), names.end()};
}

std::vector<std::string> UnhealthyComponents(const AgentSnapshot& agent) {
  std::vector<std::string> out;
  for (const auto& c : agent.components) {
    if (c.degraded || !c.available) out.push_back(c.name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status CheckClusterHealth(AlertSource* alerts, const AgentSnapshot& agent, const OperatorConfig& config,
                          GaugeTable& metrics, const HealthLabels& labels) {
  if (alerts) {
    auto firing = alerts->FiringCriticalAlerts();
    if (!firing.ok()) {
      Record(metrics, labels, "healthcheck_query_failed", true);
      return Status::IoError("unable to query critical alerts: " + firing.status().message());
    }
    Record(metrics, labels, "healthcheck_query_failed", false);
    const std::vector<std::string> counted = CountedCriticalAlerts(*firing, config, labels.cluster);
    Record(metrics, labels, "critical_alerts_firing", !counted.empty());
    if (!counted.empty()) return Status::Conflict("critical alert(s) firing: " + Join(counted));
  }
  const std::vector<std::string> unhealthy = UnhealthyComponents(agent);
  Record(metrics, labels, "cluster_operators_degraded", !unhealthy.empty());
  if (!unhealthy.empty()) return Status::Conflict("degraded operators: " + Join(unhealthy));
  return Status::OK();
}

}  // namespace cincinnati::upgrade
