#include "insight/update_paths.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <queue>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/semver.h"

namespace cincinnati::insight {
namespace {

using Id = uint32_t;
constexpr uint32_t kUnreachable = std::numeric_limits<uint32_t>::max();

enum class HopKind { kRecommended = 0, kConditional = 1, kBlocked = 2 };

// Small and flat: a union holds one per hop of every view.
struct HopInfo {
  HopKind kind = HopKind::kRecommended;
  uint32_t channel = 0;
  uint32_t risks = 0;  // conditional: index of its risk names in the union (0: none)
  uint32_t why = 0;    // blocked: index of the reason in the union (0: none)
};

// The union of the channel views: releases by version, and for each (from, to) the
// best way to take it (recommended over conditional over blocked; fewer risks; the
// earlier channel). Copyable: the union with blocked hops is a copy of the plain one.
class UnionGraph {
 public:
  explicit UnionGraph(const std::vector<ChannelView>& views) {
    risk_lists_.emplace_back();
    whys_.emplace_back();
    for (uint32_t c = 0; c < views.size(); ++c) {
      const Graph& g = *views[c].view;
      std::vector<Id> ids(g.node_count());
      for (NodeIndex i = 0; i < g.node_count(); ++i) ids[i] = Intern(g.node(i).version, c);
      for (NodeIndex i = 0; i < g.node_count(); ++i) out_[ids[i]].reserve(out_[ids[i]].size() + g.successors(i).size());
      for (const Edge& e : g.Edges()) Offer(ids[e.from], ids[e.to], HopInfo{HopKind::kRecommended, c, 0, 0});
      for (const ConditionalEdge& group : g.conditional_edges()) {
        auto risks = static_cast<uint32_t>(risk_lists_.size());
        risk_lists_.emplace_back();
        for (const Risk& r : group.risks) risk_lists_.back().push_back(r.name);
        for (const ConditionalEdgeRef& ref : group.edges) {
          auto a = g.Find(ref.from), b = g.Find(ref.to);
          if (a && b) Offer(ids[*a], ids[*b], HopInfo{HopKind::kConditional, c, risks, 0});
        }
      }
    }
    Rank();
    IndexIncoming();
  }

  // This union with the builder's removed edges between releases of one view, as
  // blocked hops (used only to say what stops a path).
  template <typename RemovalsInto>
  UnionGraph WithBlocked(const RemovalsInto& removals_into) const {
    UnionGraph out = *this;
    for (Id b = 0; b < size(); ++b) {
      for (const EdgeRemoval& r : removals_into(versions_[b])) out.AddRemoval(r);
    }
    out.IndexIncoming();
    return out;
  }

  std::optional<Id> Find(std::string_view version) const {
    auto it = ids_.find(std::string(version));
    return it == ids_.end() ? std::nullopt : std::optional<Id>(it->second);
  }
  size_t size() const { return versions_.size(); }
  const std::string& version(Id i) const { return versions_[i]; }
  uint32_t rank(Id i) const { return rank_[i]; }
  const std::vector<std::pair<Id, HopInfo>>& out(Id i) const { return out_[i]; }
  // The hops into `i`: (from, position in out(from)).
  const std::vector<std::pair<Id, uint32_t>>& in(Id i) const { return in_[i]; }
  const std::vector<std::string>& risks(const HopInfo& h) const { return risk_lists_[h.risks]; }
  const std::string& why(const HopInfo& h) const { return whys_[h.why]; }
  const HopInfo& hop(Id a, Id b) const {
    for (const auto& [to, info] : out_[a]) {
      if (to == b) return info;
    }
    static const HopInfo kNone;
    return kNone;
  }

 private:
  void AddRemoval(const EdgeRemoval& r) {
    auto a = ids_.find(r.from), b = ids_.find(r.to);
    if (a == ids_.end() || b == ids_.end()) return;
    std::optional<uint32_t> channel;
    for (uint32_t c : channels_of_[a->second]) {
      if (std::count(channels_of_[b->second].begin(), channels_of_[b->second].end(), c)) {
        channel = c;
        break;
      }
    }
    if (!channel) return;
    whys_.push_back(r.Describe());
    Offer(a->second, b->second, HopInfo{HopKind::kBlocked, *channel, 0, static_cast<uint32_t>(whys_.size() - 1)});
  }

  Id Intern(const std::string& version, uint32_t channel) {
    auto it = ids_.find(version);
    if (it == ids_.end()) {
      it = ids_.emplace(version, static_cast<Id>(versions_.size())).first;
      versions_.push_back(version);
      out_.emplace_back();
      channels_of_.emplace_back();
    }
    channels_of_[it->second].push_back(channel);
    return it->second;
  }

  void Offer(Id a, Id b, HopInfo info) {
    auto key = [this](const HopInfo& h) {
      return std::make_tuple(static_cast<int>(h.kind), risk_lists_[h.risks].size(), h.channel);
    };
    for (auto& [to, existing] : out_[a]) {
      if (to != b) continue;
      if (key(info) < key(existing)) existing = info;
      return;
    }
    out_[a].emplace_back(b, info);
  }

  void IndexIncoming() {
    in_.assign(out_.size(), {});
    for (Id a = 0; a < out_.size(); ++a) {
      for (uint32_t k = 0; k < out_[a].size(); ++k) in_[out_[a][k].first].emplace_back(a, k);
    }
  }

  // rank: position in SemVer order (versions that do not parse first, by text).
  void Rank() {
    std::vector<Id> order(versions_.size());
    std::vector<std::optional<Version>> parsed;
    for (const std::string& v : versions_) {
      auto p = Version::Parse(v);
      parsed.push_back(p.ok() ? std::optional<Version>(*p) : std::nullopt);
    }
    for (Id i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](Id a, Id b) {
      if (parsed[a].has_value() != parsed[b].has_value()) return !parsed[a].has_value();
      if (parsed[a] && !(*parsed[a] == *parsed[b])) return *parsed[a] < *parsed[b];
      return versions_[a] < versions_[b];
    });
    rank_.resize(order.size());
    for (uint32_t r = 0; r < order.size(); ++r) rank_[order[r]] = r;
  }

  std::unordered_map<std::string, Id> ids_;
  std::vector<std::string> versions_;
  std::vector<std::vector<uint32_t>> channels_of_;
  std::vector<std::vector<std::string>> risk_lists_;  // [0]: none
  std::vector<std::string> whys_;                     // [0]: none
  std::vector<std::vector<std::pair<Id, HopInfo>>> out_;
  std::vector<std::vector<std::pair<Id, uint32_t>>> in_;
  std::vector<uint32_t> rank_;
};

struct Search {
  std::vector<std::vector<Id>> paths;
  bool truncated = false;
};

// Best-first over partial paths, ordered by (hops so far + exact hops left, then newer
// releases first, hop by hop). The key never decreases along an extension, so complete
// paths come out in the answer's order.
Search FindPaths(const UnionGraph& g, Id from, Id to, const std::function<bool(const HopInfo&)>& usable, size_t k,
                 size_t max_expansions) {
  Search result;
  // Hops left to `to` from each release, over usable hops (reverse breadth-first).
  std::vector<uint32_t> left(g.size(), kUnreachable);
  std::deque<Id> queue{to};
  left[to] = 0;
  while (!queue.empty()) {
    Id v = queue.front();
    queue.pop_front();
    for (const auto& [u, k] : g.in(v)) {
      if (left[u] == kUnreachable && usable(g.out(u)[k].second)) {
        left[u] = left[v] + 1;
        queue.push_back(u);
      }
    }
  }
  if (left[from] == kUnreachable || from == to) return result;
  struct Partial {
    uint32_t bound;
    std::vector<Id> path;
  };
  auto better = [&g](const Partial& a, const Partial& b) {  // a comes out before b
    if (a.bound != b.bound) return a.bound < b.bound;
    for (size_t i = 0; i < std::min(a.path.size(), b.path.size()); ++i) {
      if (a.path[i] != b.path[i]) return g.rank(a.path[i]) > g.rank(b.path[i]);
    }
    return a.path.size() < b.path.size();
  };
  auto later = [&better](const Partial& a, const Partial& b) { return better(b, a); };
  std::priority_queue<Partial, std::vector<Partial>, decltype(later)> open(later);
  open.push(Partial{left[from], {from}});
  size_t expansions = 0;
  while (!open.empty() && result.paths.size() < k) {
    if (++expansions > max_expansions) {
      result.truncated = true;
      break;
    }
    Partial p = open.top();
    open.pop();
    Id last = p.path.back();
    if (last == to) {
      result.paths.push_back(std::move(p.path));
      continue;
    }
    for (const auto& [next, info] : g.out(last)) {
      if (!usable(info) || left[next] == kUnreachable) continue;
      if (std::find(p.path.begin(), p.path.end(), next) != p.path.end()) continue;  // views are DAGs; be safe
      Partial q{static_cast<uint32_t>(p.path.size()) + left[next], p.path};
      q.path.push_back(next);
      open.push(std::move(q));
    }
  }
  return result;
}

UpdatePath ToPath(const UnionGraph& g, const std::vector<std::string>& channels, const std::vector<Id>& ids,
                  std::vector<BlockedHop>* blocked = nullptr) {
  UpdatePath path;
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    const HopInfo& info = g.hop(ids[i], ids[i + 1]);
    path.hops.push_back(PathHop{g.version(ids[i]), g.version(ids[i + 1]), channels[info.channel], g.risks(info)});
    if (blocked && info.kind == HopKind::kBlocked) {
      blocked->push_back(BlockedHop{g.version(ids[i]), g.version(ids[i + 1]), channels[info.channel], g.why(info)});
    }
  }
  return path;
}

bool Accepted(const std::vector<std::string>& accepted, const std::string& risk) {
  return std::count(accepted.begin(), accepted.end(), "*") || std::count(accepted.begin(), accepted.end(), risk);
}

}  // namespace

// The plain union, and the one with blocked hops made when a question first needs it.
struct PathFinder::Union {
  Union(const std::vector<ChannelView>& views, PathFinder::RemovalsInto removals_into)
      : plain(views), removals_into(std::move(removals_into)) {}
  const UnionGraph& WithBlocked() {
    if (!removals_into) return plain;
    std::call_once(blocked_once, [this] { blocked.emplace(plain.WithBlocked(removals_into)); });
    return *blocked;
  }
  UnionGraph plain;
  PathFinder::RemovalsInto removals_into;
  std::once_flag blocked_once;
  std::optional<UnionGraph> blocked;
};

// The removals of a list, by target, in list order.
PathFinder::RemovalsInto PathFinder::RemovalsFrom(const std::vector<EdgeRemoval>& removals) {
  if (removals.empty()) return nullptr;
  auto by_target = std::make_shared<std::unordered_map<std::string, std::vector<EdgeRemoval>>>();
  for (const EdgeRemoval& r : removals) (*by_target)[r.to].push_back(r);
  return [by_target](std::string_view to) {
    auto it = by_target->find(std::string(to));
    return it == by_target->end() ? std::vector<EdgeRemoval>() : it->second;
  };
}

PathFinder::PathFinder(const std::vector<ChannelView>& views, const std::vector<EdgeRemoval>& removals)
    : PathFinder(FromRemovals{}, views, RemovalsFrom(removals)) {}

PathFinder::PathFinder(const std::vector<ChannelView>& views, const BuilderRecords& records)
    : PathFinder(FromRemovals{}, views, [&records](std::string_view to) { return records.RemovalsInto(to); }) {}

PathFinder::PathFinder(FromRemovals, const std::vector<ChannelView>& views, RemovalsInto removals_into)
    : union_(std::make_unique<Union>(views, std::move(removals_into))) {
  for (const ChannelView& v : views) channels_.push_back(v.channel);
}
PathFinder::~PathFinder() = default;
PathFinder::PathFinder(PathFinder&&) noexcept = default;

PathAnswer FindUpdatePaths(const std::vector<ChannelView>& views, const std::vector<EdgeRemoval>& removals,
                           std::string_view from, std::string_view to, const PathOptions& options) {
  return PathFinder(views, removals).Find(from, to, options);
}

PathAnswer PathFinder::Find(std::string_view from, std::string_view to, const PathOptions& options) const {
  PathAnswer answer;
  answer.from = from;
  answer.to = to;
  answer.accepted_risks = options.accepted_risks;
  answer.channels = channels_;
  const std::string channels = fmt::format("{}", fmt::join(answer.channels, ", "));
  const UnionGraph& g = union_->plain;
  auto a = g.Find(from), b = g.Find(to);
  if (!a || !b) {
    answer.stop = "not_in_channel";
    const std::string where = fmt::format("{} {}", answer.channels.size() == 1 ? "channel" : "channels", channels);
    answer.message = !a && !b ? fmt::format("neither {} nor {} is a release of {}", from, to, where)
                              : fmt::format("{} is not a release of {}", !a ? from : to, where);
    return answer;
  }
  if (*a == *b) {
    answer.stop = "same_release";
    answer.message = fmt::format("{} is already the release asked for", from);
    return answer;
  }
  auto accepted = [&](const HopInfo& h) {
    if (h.kind == HopKind::kBlocked) return false;
    for (const std::string& r : g.risks(h)) {
      if (!Accepted(options.accepted_risks, r)) return false;
    }
    return true;
  };
  Search found = FindPaths(g, *a, *b, accepted, std::max<size_t>(1, options.alternatives), options.max_expansions);
  answer.truncated = found.truncated;
  for (const auto& ids : found.paths) answer.paths.push_back(ToPath(g, channels_, ids));
  if (!answer.paths.empty()) return answer;

  // What stops it: risks, then edges the builder removed, then nothing at all.
  auto any_risk = [](const HopInfo& h) { return h.kind != HopKind::kBlocked; };
  Search risky = FindPaths(g, *a, *b, any_risk, 1, options.max_expansions);
  if (!risky.paths.empty()) {
    answer.stop = "needs_risk";
    answer.would_take = ToPath(g, channels_, risky.paths.front());
    std::set<std::string> needed;
    for (const PathHop& hop : answer.would_take->hops) {
      for (const std::string& r : hop.risks) {
        if (!Accepted(options.accepted_risks, r)) needed.insert(r);
      }
    }
    answer.needed_risks.assign(needed.begin(), needed.end());
    answer.message = fmt::format("every path from {} to {} in {} is conditional: the shortest needs accepting {} ({})",
                                 from, to, channels, fmt::join(answer.needed_risks, ", "),
                                 fmt::format("accept={}", fmt::join(answer.needed_risks, ",")));
    return answer;
  }
  const UnionGraph& with_blocked = union_->WithBlocked();
  Search blocked = FindPaths(with_blocked, *a, *b, [](const HopInfo&) { return true; }, 1, options.max_expansions);
  if (!blocked.paths.empty()) {
    answer.stop = "blocked";
    answer.would_take = ToPath(with_blocked, channels_, blocked.paths.front(), &answer.blocked);
    std::vector<std::string> hops;
    for (const BlockedHop& h : answer.blocked) hops.push_back(fmt::format("{} -> {} ({})", h.from, h.to, h.why));
    answer.message = fmt::format("every path from {} to {} in {} crosses a blocked edge: {}", from, to, channels,
                                 fmt::join(hops, "; "));
    return answer;
  }
  answer.stop = "no_route";
  answer.message = g.rank(*b) < g.rank(*a)
                       ? fmt::format("{} is older than {}: updates only go forward", to, from)
                       : fmt::format("nothing in {} leads from {} to {}", channels, from, to);
  if (found.truncated) answer.message += " (the search stopped early: the graph is too large)";
  return answer;
}

}  // namespace cincinnati::insight
