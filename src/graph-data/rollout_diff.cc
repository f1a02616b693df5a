#include "graph-data/rollout_diff.h"

#include <algorithm>
#include <map>
#include <optional>

namespace cincinnati::graphdata {
namespace {

struct Placement {
  std::string file;
  int64_t start = 0;
  bool locked = false;
  const ManagedChannel* channel = nullptr;
};

// (release, channel) -> where and when a tree starts it.
std::map<std::pair<std::string, std::string>, Placement> Placements(const GraphData& data) {
  std::map<std::pair<std::string, std::string>, Placement> out;
  for (const auto& [path, file] : data.managing_files) {
    for (const VersionStart& v : file.versions) {
      for (const ManagedChannel& c : file.channels) {
        out[{v.version.ToString(), c.name}] = Placement{path, v.start, v.locked, &c};
      }
    }
  }
  return out;
}

int64_t Duration(const ManagedChannel& channel, const std::string& kind) {
  const PhasedRule* fallback = nullptr;
  for (const PhasedRule& r : channel.rules) {
    if (r.from_version == kind) return r.duration_seconds;
    if (!r.from_version) fallback = &r;
  }
  return fallback ? fallback->duration_seconds : 0;
}

double Share(const std::optional<Placement>& p, const std::string& kind, int64_t at) {
  if (!p || at < p->start) return 0;
  int64_t d = Duration(*p->channel, kind);
  if (d <= 0) return 1;
  return std::clamp(static_cast<double>(at - p->start) / static_cast<double>(d), 0.0, 1.0);
}

}  // namespace

std::vector<RolloutChange> DiffRollouts(const GraphData& old_data, const GraphData& new_data, int64_t at,
                                        double max_jump) {
  auto before = Placements(old_data), after = Placements(new_data);
  // Every (release, channel) of either tree: one new in the tree (a new release, or a
  // channel new for a release) starts from nobody seeing it.
  std::map<std::pair<std::string, std::string>, std::pair<std::optional<Placement>, std::optional<Placement>>> all;
  for (const auto& [key, place] : before) all[key].first = place;
  for (const auto& [key, place] : after) all[key].second = place;
  std::vector<RolloutChange> changes;
  for (const auto& [key, places] : all) {
    const auto& [old_place, new_place] = places;
    const Placement& any = new_place ? *new_place : *old_place;
    // A channel without rules shows a release to all or none: patch and minor are one.
    const bool ruled = (old_place && !old_place->channel->rules.empty()) || (new_place && !new_place->channel->rules.empty());
    // A release new in a channel without rules reaches everyone at its start, by design.
    if (!old_place && !ruled) continue;
    const std::vector<std::string> kinds = ruled ? std::vector<std::string>{"patch", "minor"} : std::vector<std::string>{"all"};
    for (const std::string& kind : kinds) {
      const std::string rule_kind = kind == "all" ? "patch" : kind;
      double was = Share(old_place, rule_kind, at), now = Share(new_place, rule_kind, at);
      if (now < was - 1e-9 || now > was + max_jump) {
        changes.push_back(RolloutChange{any.file, key.first, key.second, kind, was, now,
                                        new_place && new_place->locked, !old_place.has_value()});
      }
    }
  }
  return changes;
}

}  // namespace cincinnati::graphdata
