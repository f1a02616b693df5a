// Update paths: how a cluster gets from one release to another through the views it
// is served, one update at a time.
//
// The input is the served view of each channel the path may use (the whole policy
// chain's answer for the cluster's channel, arch, id and version), in the order the
// caller prefers them. A hop is an edge of one of those views: a recommended edge, or a
// conditional edge whose risks are all accepted ("*" accepts every risk). Paths come
// out shortest first (hops), then preferring newer intermediate releases (compared
// hop by hop), up to `alternatives` of them; each hop names its channel and risks.
// When there is none, the answer says what stops it: a release missing from the
// views (not_in_channel), the same release (same_release), risks to accept
// (needs_risk, with the shortest path that needs them), edges the graph builder
// removed (blocked, with their causes), or nothing that leads there (no_route).
// The search is best-first with an exact remaining-distance bound, so it expands only
// what can be part of an answer; `max_expansions` bounds the work on huge graphs
// (then `truncated` is set). Pure; thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "insight/builder_records.h"

namespace cincinnati::insight {

struct ChannelView {
  std::string channel;
  std::shared_ptr<const Graph> view;
};

struct PathOptions {
  std::vector<std::string> accepted_risks;  // risk names; "*" accepts all
  size_t alternatives = 1;
  size_t max_expansions = 200000;
};

struct PathHop {
  std::string from, to, channel;
  std::vector<std::string> risks;  // empty: a recommended edge
};

struct UpdatePath {
  std::vector<PathHop> hops;
};

struct BlockedHop {
  std::string from, to, channel, why;
};

struct PathAnswer {
  std::string from, to;
  std::vector<std::string> channels;
  std::vector<std::string> accepted_risks;
  std::vector<UpdatePath> paths;
  // Set when `paths` is empty: not_in_channel, same_release, needs_risk, blocked, no_route.
  std::string stop;
  std::string message;
  std::vector<std::string> needed_risks;   // needs_risk
  std::optional<UpdatePath> would_take;    // needs_risk, blocked: the shortest path that would do
  std::vector<BlockedHop> blocked;         // blocked: the removed edges on `would_take`
  bool truncated = false;                  // the search stopped at max_expansions
};

// The views joined once, for many questions (the web page asks one per click; tests
// ask every pair). `removals`: the builder's removed edges for the cluster's arch
// (BuilderRecords), used only to say what blocks a path; may be empty. Given `records`
// (for the cluster's arch) instead, they are read only when a question finds no path
// but through them, for the releases of the views alone; `records` must outlive the
// PathFinder.
class PathFinder {
 public:
  PathFinder(const std::vector<ChannelView>& views, const std::vector<EdgeRemoval>& removals);
  PathFinder(const std::vector<ChannelView>& views, const BuilderRecords& records);
  ~PathFinder();
  PathFinder(PathFinder&&) noexcept;
  PathAnswer Find(std::string_view from, std::string_view to, const PathOptions& options) const;

 private:
  // The builder's removed edges into a release of the views.
  using RemovalsInto = std::function<std::vector<EdgeRemoval>(std::string_view to)>;
  struct FromRemovals {};  // tells the constructors apart
  PathFinder(FromRemovals, const std::vector<ChannelView>& views, RemovalsInto removals_into);
  static RemovalsInto RemovalsFrom(const std::vector<EdgeRemoval>& removals);

  struct Union;
  std::vector<std::string> channels_;
  std::unique_ptr<Union> union_;
};

PathAnswer FindUpdatePaths(const std::vector<ChannelView>& views, const std::vector<EdgeRemoval>& removals,
                           std::string_view from, std::string_view to, const PathOptions& options);

std::string PathJson(const PathAnswer& answer);
std::string PathText(const PathAnswer& answer);

}  // namespace cincinnati::insight
