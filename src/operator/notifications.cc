#include "operator/notifications.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

namespace cincinnati::upgrade {
namespace {

const UpgradeCondition* FirstFalseCondition(const UpgradeConfig& config) {
  const UpgradeHistory* h = config.FindHistory(config.spec.desired.version);
  if (!h) return nullptr;
  // Conditions are newest-added first; the reference walks them in that order.
  for (const auto& c : h->conditions) {
    if (c.status == "False") return &c;
  }
  return nullptr;
}

std::string DelayedText(const UpgradeConfig& config) {
  const std::string& v = config.spec.desired.version;
  const UpgradeCondition* c = FirstFalseCondition(config);
  const std::string type = c ? c->type : "";
  if (type == "ClusterHealthyBeforeUpgrade") {
    return fmt::format("Cluster upgrade to version {} is experiencing a delay as health alerts are firing. The upgrade will continue to retry.", v);
  }
  if (type == "ExternalDependenciesAvailable") {
    return fmt::format("Cluster upgrade to version {} is experiencing a delay as an external dependency of the upgrade is currently unavailable. The upgrade will continue to retry.", v);
  }
  if (type == "ComputeCapacityReserved") {
    return fmt::format("Cluster upgrade to version {} is experiencing a delay attempting to scale up an additional worker node. The upgrade will continue to retry.", v);
  }
  return fmt::format("Cluster upgrade to version {} is experiencing a delay whilst it performs necessary pre-upgrade procedures. The upgrade will continue to retry.", v);
}

std::string FailedText(const UpgradeConfig& config) {
  const std::string& v = config.spec.desired.version;
  const UpgradeCondition* c = FirstFalseCondition(config);
  const std::string type = c ? c->type : "";
  if (type == "IsClusterUpgradable") return c->message;
  static const std::map<std::string, std::string> kStepNames = {
      {"ClusterHealthyBeforeUpgrade", "pre-upgrade health check"},
      {"ExternalDependenciesAvailable", "external dependency availability check"},
      {"ComputeCapacityReserved", "capacity reservation"},
  };
  if (auto it = kStepNames.find(type); it != kStepNames.end()) {
    return fmt::format("Cluster upgrade to version {} was cancelled during the {}. Automated upgrades will be retried on their next scheduling cycle.", v, it->second);
  }
  return fmt::format("Cluster upgrade to version {} did not pass its pre-upgrade verification checks. Automated upgrades will be retried on their next scheduling cycle.", v);
}

}  // namespace

std::string DescribeEvent(std::string_view ev, const UpgradeConfig& config, std::string_view detail) {
  const std::string& v = config.spec.desired.version;
  auto with_detail = [&](std::string text) { return detail.empty() ? text : fmt::format("{}: {}", text, detail); };
  if (ev == event::kStarted) return fmt::format("Cluster is currently being upgraded to version {}", v);
  if (ev == event::kCompleted) return fmt::format("Cluster has been successfully upgraded to version {}", v);
  if (ev == event::kDelayed) return DelayedText(config);
  if (ev == event::kFailed) return FailedText(config);
  if (ev == event::kScaleSkipped) {
    return fmt::format("Cluster upgrade to version {} has skipped Scale-Up additional Worker Node step for compute capacity reservation.", v);
  }
  if (ev == event::kSkipped) {
    return fmt::format("Cluster upgrade to version {} has experienced an issue during capacity reservation efforts. The upgrade will continue without extra compute.", v);
  }
  if (ev == event::kControlPlaneStarted) return fmt::format("Control plane upgrade to version {} has started", v);
  if (ev == event::kControlPlaneFinished) return fmt::format("Control plane upgrade to version {} has finished", v);
  if (ev == event::kWorkersFinished) return fmt::format("Worker node upgrade to version {} has finished", v);
  if (ev == event::kHealthCheck) return with_detail(fmt::format("Cluster health checks are failing during the upgrade to version {}", v));
  if (ev == event::kPreHealthCheck) return with_detail(fmt::format("Cluster health checks failed ahead of the upgrade to version {}", v));
  if (ev == event::kValidationFailed) return with_detail(fmt::format("The upgrade to version {} failed validation", v));
  return with_detail(fmt::format("{} (version {})", ev, v));
}

std::string PolicyStateFor(std::string_view ev) {
  if (ev == event::kStarted) return "started";
  if (ev == event::kDelayed || ev == event::kSkipped || ev == event::kScaleSkipped) return "delayed";
  if (ev == event::kCompleted) return "completed";
  if (ev == event::kFailed) return "failed";
  return "";
}

bool PolicyTransitionAllowed(std::string_view from, std::string_view to) {
  static const std::map<std::string, std::vector<std::string>, std::less<>> kAllowed = {
      {"scheduled", {"started"}},
      {"started", {"scale-skipped", "delayed", "completed", "failed"}},
      {"scale-skipped", {"delayed", "skipped", "completed", "failed"}},
      {"delayed", {"completed", "failed", "skipped"}},
      {"skipped", {"completed", "failed"}},
  };
  auto it = kAllowed.find(from);
  return it != kAllowed.end() && std::find(it->second.begin(), it->second.end(), to) != it->second.end();
}

Result<bool> NotificationCenter::Sent(const UpgradeConfig& config, std::string_view ev) {
  const std::string version = config.spec.desired.version;
  const size_t receivers = std::max<size_t>(notifiers_.size(), 1);
  for (size_t i = 0; i < receivers; ++i) {
    const std::string key = i == 0 ? std::string(ev) : fmt::format("{}#{}", ev, i);
    CINCINNATI_ASSIGN_OR_RETURN(bool claimed, store_.Claimed(config.cluster, version, key));
    if (!claimed) return false;
  }
  return true;
}

Status NotificationCenter::Notify(const UpgradeConfig& config, std::string_view ev, TimePoint now, std::string_view detail) {
  const std::string version = config.spec.desired.version;
  const std::string name(ev);
  Notification n;
  n.id = fmt::format("{}/{}/{}", config.cluster, version, ev);
  n.cluster = config.cluster;
  n.event = name;
  n.version = version;
  n.description = DescribeEvent(ev, config, detail);
  n.time = FormatTime(now);
  const Labels ledger_labels = {{"upgradeconfig_name", config.cluster}, {"event", name}, {"version", version}};
  const Labels failed_labels = {{"upgradeconfig_name", config.cluster}, {"event", name}};

  if (notifiers_.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(bool fresh, store_.Claim(config.cluster, version, name, n.time));
    if (fresh) spdlog::info("notification {} [{}]: {}", n.id, name, n.description);
    metrics_.Set("upgradeoperator_upgrade_notification", ledger_labels, 1);
    return Status::OK();
  }
  Status first_error = Status::OK();
  for (size_t i = 0; i < notifiers_.size(); ++i) {
    // One ledger row per webhook, so that a retry does not repeat a webhook that got it.
    const std::string key = i == 0 ? name : fmt::format("{}#{}", name, i);
    CINCINNATI_ASSIGN_OR_RETURN(bool fresh, store_.Claim(config.cluster, version, key, n.time));
    if (!fresh) continue;
    Status sent = notifiers_[i]->Send(n);
    if (sent.ok()) {
      // With several receivers (webhooks, OCM's service log and policy state) each logs its own line.
      const std::string to = notifiers_.size() > 1 ? fmt::format(" to receiver {} of {}", i + 1, notifiers_.size()) : "";
      spdlog::info("notification {} sent{}: {}", n.id, to, n.description);
      continue;
    }
    if (Status unclaimed = store_.Unclaim(config.cluster, version, key); !unclaimed.ok()) {
      spdlog::error("notification {} failed ({}) and cannot be marked for a retry: {}", n.id, sent.message(),
                    unclaimed.message());
    } else {
      spdlog::warn("notification {} failed (retried on a later pass): {}", n.id, sent.message());
    }
    if (first_error.ok()) first_error = Status::IoError(fmt::format("sending the {} notification: {}", name, sent.message()));
  }
  metrics_.Set("upgrade_notification_failed", failed_labels, first_error.ok() ? 0 : 1);
  if (first_error.ok()) metrics_.Set("upgradeoperator_upgrade_notification", ledger_labels, 1);
  return first_error;
}

}  // namespace cincinnati::upgrade
