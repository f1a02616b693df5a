#include "operator/fleet_hold.h"

#include <fmt/format.h>

#include <algorithm>

namespace cincinnati::upgrade {

const UpgradeHistory* NewestHistory(const UpgradeConfig& c) {
  const UpgradeHistory* h = c.FindHistory(c.spec.desired.version);
  return h ? h : (c.history.empty() ? nullptr : &c.history.front());
}

bool IsUpgrading(const UpgradeConfig& c) {
  const UpgradeHistory* h = NewestHistory(c);
  return h && h->phase == Phase::kUpgrading;
}

bool IsFinished(const UpgradeConfig& c) {
  const UpgradeHistory* h = NewestHistory(c);
  return h && (h->phase == Phase::kUpgraded || h->phase == Phase::kFailed);
}

std::string FleetHold(const UpgradeConfig& config, const OperatorConfig& settings, const FleetPause& pause,
                      const std::map<std::string, UpgradeConfig>& configs, const ClusterLabels& labels_of) {
  if (!pause.reason.empty() && (pause.version.empty() || pause.version == config.spec.desired.version)) {
    return "the fleet is paused: " + pause.reason;
  }
  if (settings.max_parallel > 0) {
    int upgrading = 0;
    for (const auto& [name, c] : configs) {
      if (name != config.cluster && IsUpgrading(c)) ++upgrading;
    }
    if (upgrading >= settings.max_parallel) {
      return fmt::format("the fleet allows {} upgrade(s) at once and {} are running", settings.max_parallel, upgrading);
    }
  }
  if (!settings.waves.empty()) {
    auto wave_of = [&](const std::string& cluster) {
      const auto* labels = labels_of(cluster);
      auto it = labels ? labels->find(settings.wave_label) : std::map<std::string, std::string>::const_iterator{};
      if (!labels || it == labels->end()) return settings.waves.size();
      auto pos = std::find(settings.waves.begin(), settings.waves.end(), it->second);
      return static_cast<size_t>(pos - settings.waves.begin());
    };
    const size_t mine = wave_of(config.cluster);
    for (const auto& [name, c] : configs) {
      if (name == config.cluster || IsFinished(c)) continue;
      const size_t theirs = wave_of(name);
      if (theirs < mine) return fmt::format("wave {} goes first (cluster {})", settings.waves[theirs], name);
    }
  }
  return "";
}

}  // namespace cincinnati::upgrade
