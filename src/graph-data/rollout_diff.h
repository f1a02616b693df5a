// Presubmit check of a graph-data 2.x change against rollouts in flight.
//
// For every release a managing file starts in a channel, in the old and the new tree,
// and for each kind of edge into it (patch and minor), the share of clusters that see
// such an edge at time `at` is (at - start) / duration, clamped to [0, 1] (all or
// none when there is no window). A change that lowers a share takes an edge away from
// clusters that already have it; one that raises it by more than `max_jump` makes
// many clusters get it at once. Both are reported, unless the new entry is
// `locked: true`. A release new in the tree, or new in a channel, was seen by nobody:
// starting it past `max_jump` of its window is reported like a move (in a channel with
// phased rollouts; one without them offers a new release to all at once by design). A
// channel without rules shows a release to all clusters or none: one change of kind "all".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph-data/graph_data.h"

namespace cincinnati::graphdata {

struct RolloutChange {
  std::string file;     // the new managing file (or the old one when the release left)
  std::string release;  // version
  std::string channel;
  std::string kind;     // "patch", "minor", or "all" (a channel without rules)
  double old_share = 0, new_share = 0;
  bool locked = false;  // exempt: the new entry is locked
  bool added = false;   // the release is new in this channel
};

std::vector<RolloutChange> DiffRollouts(const GraphData& old_data, const GraphData& new_data, int64_t at,
                                        double max_jump = 0.10);

}  // namespace cincinnati::graphdata
