#include "operator/maintenance.h"

#include <fmt/format.h>

#include <algorithm>

namespace cincinnati::upgrade {
namespace {

std::string ClusterSuffix(const OperatorConfig& config, const WindowTarget& t) {
  return config.alertmanager.cluster_label.empty() ? "" : fmt::format(" on cluster {}", t.cluster);
}

std::vector<SilenceMatcher> WithCluster(std::vector<SilenceMatcher> matchers, const OperatorConfig& config, const WindowTarget& t) {
  if (!config.alertmanager.cluster_label.empty()) matchers.push_back({config.alertmanager.cluster_label, t.cluster, false, true});
  return matchers;
}

std::vector<SilenceMatcher> DefaultMatchers() {
  return {{"severity", "(warning|info)", true, true}, {"namespace", "(^openshift.*|^kube.*|^redhat.*|^default$)", true, true}};
}

bool Ours(const Silence& s) { return s.created_by == kSilenceCreator; }

Status CreateIfMissing(MaintenanceWindows& windows, const std::vector<Silence>& existing, Silence wanted) {
  const bool present = std::any_of(existing.begin(), existing.end(),
                                   [&](const Silence& s) { return Ours(s) && s.comment == wanted.comment; });
  if (present) return Status::OK();
  auto id = windows.Create(wanted);
  return id.ok() ? Status::OK() : id.status();
}

}  // namespace

Status EnsureControlPlaneWindow(MaintenanceWindows& windows, const OperatorConfig& config, const WindowTarget& target, TimePoint now,
                                std::chrono::seconds length) {
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<Silence> existing, windows.List());
  const std::string suffix = ClusterSuffix(config, target);
  Silence base;
  base.starts_at = FormatTime(now);
  base.ends_at = FormatTime(now + std::max(length, std::chrono::seconds(1)));
  base.created_by = std::string(kSilenceCreator);

  Silence defaults = base;
  defaults.comment = fmt::format("Silence for OSD control plane upgrade to version {}{}", target.version, suffix);
  defaults.matchers = WithCluster(DefaultMatchers(), config, target);
  CINCINNATI_RETURN_IF_ERROR(CreateIfMissing(windows, existing, defaults));

  if (!config.control_plane_criticals.empty()) {
    std::string names;
    for (const auto& n : config.control_plane_criticals) names += (names.empty() ? "(" : "|") + n;
    names += ")";
    Silence criticals = base;
    criticals.comment = fmt::format("Silence for critical alerts during OSD control plane upgrade to version {}{}", target.version, suffix);
    criticals.matchers = WithCluster({{"alertname", names, true, true}}, config, target);
    CINCINNATI_RETURN_IF_ERROR(CreateIfMissing(windows, existing, criticals));
  }
  return Status::OK();
}

Status RemoveWindows(MaintenanceWindows& windows, const OperatorConfig& config, const WindowTarget& target, std::string_view kind) {
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<Silence> existing, windows.List());
  const std::string suffix = ClusterSuffix(config, target);
  const std::string version_text = fmt::format("to version {}", target.version);
  for (const auto& s : existing) {
    if (!Ours(s) || s.state != "active") continue;
    if (s.comment.find(kind) == std::string::npos || s.comment.find(version_text) == std::string::npos) continue;
    if (!suffix.empty() && s.comment.find(suffix) == std::string::npos) continue;
    CINCINNATI_RETURN_IF_ERROR(windows.Expire(s.id));
  }
  return Status::OK();
}

Status EnsureWorkerWindow(MaintenanceWindows& windows, const OperatorConfig& config, const WindowTarget& target, int64_t pending,
                          std::chrono::seconds length, TimePoint now) {
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<Silence> existing, windows.List());
  const std::string suffix = ClusterSuffix(config, target);
  const std::string prefix = fmt::format("Silence for OSD worker node upgrade to version {}", target.version);
  Silence wanted;
  wanted.comment = fmt::format("{} with remaining {} nodes{}", prefix, pending, suffix);
  wanted.matchers = WithCluster(DefaultMatchers(), config, target);
  wanted.starts_at = FormatTime(now);
  wanted.ends_at = FormatTime(now + std::max(length, std::chrono::seconds(1)));
  wanted.created_by = std::string(kSilenceCreator);
  for (const auto& s : existing) {
    if (Ours(s) && s.state == "active" && s.comment == wanted.comment) return Status::OK();
  }
  for (const auto& s : existing) {
    if (!Ours(s) || s.state != "active" || s.comment.rfind(prefix, 0) != 0) continue;
    if (!suffix.empty() && s.comment.find(suffix) == std::string::npos) continue;
    CINCINNATI_RETURN_IF_ERROR(windows.Expire(s.id));
    break;
  }
  auto id = windows.Create(wanted);
  return id.ok() ? Status::OK() : id.status();
}

Result<bool> MaintenanceActive(MaintenanceWindows& windows, const OperatorConfig& config, const WindowTarget& target) {
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<Silence> existing, windows.List());
  const std::string suffix = ClusterSuffix(config, target);
  return std::any_of(existing.begin(), existing.end(), [&](const Silence& s) {
    return Ours(s) && s.state == "active" && (suffix.empty() || s.comment.find(suffix) != std::string::npos);
  });
}

}  // namespace cincinnati::upgrade
