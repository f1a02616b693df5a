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
  std::vector<RolloutChange> changes;
  for (const auto& [key, old_place] : before) {
    std::optional<Placement> new_place;
    if (auto it = after.find(key); it != after.end()) new_place = it->second;
    for (const char* kind : {"patch", "minor"}) {
      double was = Share(old_place, kind, at), now = Share(new_place, kind, at);
      if (now < was - 1e-9 || now > was + max_jump) {
        changes.push_back(RolloutChange{new_place ? new_place->file : old_place.file, key.first, key.second, kind, was,
                                        now, new_place && new_place->locked});
      }
    }
  }
  return changes;
}

}  // namespace cincinnati::graphdata
