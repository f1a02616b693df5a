#include "policy/phased_rollout.h"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>


#include <fmt/format.h>

#include "core/date_time.h"
#include "core/internal_metadata.h"
#include "core/semver.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "policy/params.h"

namespace cincinnati::policy {
namespace {

// A node's internal phasing keys, decoded (core/internal_metadata.h).
struct NodePhasing {
  std::vector<ChannelStart> starts;
  std::vector<ChannelRollouts> rollouts;
};

class Phasing {
 public:
  // Decodes every node's keys once; an error names the node and the key.
  static Result<Phasing> Of(const Graph& graph, const std::string& start_key, const std::string& rollouts_key) {
    Phasing p;
    p.nodes_.resize(graph.node_count());
    for (NodeIndex i = 0; i < graph.node_count(); ++i) {
      const Metadata& m = graph.node(i).metadata;
      auto context = [&](const std::string& key) { return fmt::format("{}: {}", graph.node(i).version, key); };
      if (auto it = m.find(start_key); it != m.end()) {
        auto starts = DecodePhasedStarts(it->second);
        if (!starts.ok()) return starts.status().WithContext(context(start_key));
        p.nodes_[i].starts = std::move(starts).value();
      }
      if (auto it = m.find(rollouts_key); it != m.end()) {
        auto rollouts = DecodePhasedRollouts(it->second);
        if (!rollouts.ok()) return rollouts.status().WithContext(context(rollouts_key));
        p.nodes_[i].rollouts = std::move(rollouts).value();
      }
    }
    return p;
  }

  // When node i joins `channel` (INT64_MIN: it has no start there, so always).
  int64_t StartOf(NodeIndex i, std::string_view channel) const {
    for (const ChannelStart& s : nodes_[i].starts) {
      if (s.channel == channel) return s.start;
    }
    return INT64_MIN;
  }

  // The window of `criterion` among node i's rules for `channel`, the last one
  // written winning; nullopt when there is none.
  std::optional<int64_t> RuleOf(NodeIndex i, std::string_view channel, std::string_view criterion) const {
    std::optional<int64_t> found;
    for (const ChannelRollouts& block : nodes_[i].rollouts) {
      if (block.channel != channel) continue;
      for (const RolloutRule& rule : block.rules) {
        if (rule.criterion == criterion) found = rule.seconds;
      }
    }
    return found;
  }

  const std::vector<ChannelRollouts>& RolloutsOf(NodeIndex i) const { return nodes_[i].rollouts; }

 private:
  std::vector<NodePhasing> nodes_;
};

// The one rule of the design for an edge in a channel: it begins at the later of its
// endpoints' starts; its window is the target's matching rule ("minor" when major or
// minor differ, else "patch"; then the default "*"), or 0 when none matches.
struct EdgeWindow {
  int64_t begin = INT64_MIN;
  int64_t window = 0;
  std::string target;  // target version without build, when phased
};

EdgeWindow WindowOf(const Graph& graph, const Phasing& phasing, NodeIndex from, NodeIndex to, std::string_view channel) {
  EdgeWindow w;
  w.begin = std::max(phasing.StartOf(from, channel), phasing.StartOf(to, channel));
  if (phasing.RolloutsOf(to).empty()) return w;
  auto fv = Version::Parse(graph.node(from).version), tv = Version::Parse(graph.node(to).version);
  if (!fv.ok() || !tv.ok()) return w;
  bool minor = fv->major() != tv->major() || fv->minor() != tv->minor();
  std::optional<int64_t> rule = phasing.RuleOf(to, channel, minor ? "minor" : "patch");
  if (!rule) rule = phasing.RuleOf(to, channel, "*");
  if (!rule || *rule <= 0) return w;
  w.window = *rule;
  w.target = tv->ToStringWithoutBuild();
  return w;
}

std::string StartKey(std::string_view prefix) { return PrefixedKey(prefix, kPhasedStartSuffix); }
std::string RolloutsKey(std::string_view prefix) { return PrefixedKey(prefix, kPhasedRolloutsSuffix); }

}  // namespace

Result<std::vector<RolloutWindow>> RolloutWindows(const Graph& graph, std::string_view key_prefix) {
  CINCINNATI_ASSIGN_OR_RETURN(Phasing phasing, Phasing::Of(graph, StartKey(key_prefix), RolloutsKey(key_prefix)));
  std::map<std::tuple<std::string, std::string, std::string>, RolloutWindow> windows;
  for (const Edge& e : graph.Edges()) {
    for (const ChannelRollouts& block : phasing.RolloutsOf(e.to)) {
      const std::string& channel = block.channel;
      // Both endpoints must be in the channel (a graph builder's graph holds them all).
      if (phasing.StartOf(e.from, channel) == INT64_MIN || phasing.StartOf(e.to, channel) == INT64_MIN) continue;
      EdgeWindow w = WindowOf(graph, phasing, e.from, e.to, channel);
      if (w.window == 0) continue;
      const std::string& from = graph.node(e.from).version;
      auto fv = Version::Parse(from);
      RolloutWindow r{channel, fv.ok() ? fv->ToStringWithoutBuild() : from, w.target, w.begin, w.window};
      windows.emplace(std::make_tuple(r.channel, r.from, r.to), r);
    }
  }
  std::vector<RolloutWindow> out;
  for (auto& [_, w] : windows) out.push_back(std::move(w));
  return out;
}

Result<std::vector<EdgeTiming>> EdgeTimings(const Graph& view, std::string_view channel, std::string_view id,
                                            std::string_view key_prefix) {
  CINCINNATI_ASSIGN_OR_RETURN(Phasing phasing, Phasing::Of(view, StartKey(key_prefix), RolloutsKey(key_prefix)));
  std::vector<EdgeTiming> out;
  for (const Edge& e : view.Edges()) {
    EdgeWindow w = WindowOf(view, phasing, e.from, e.to, channel);
    EdgeTiming t{view.node(e.from).version, view.node(e.to).version, w.begin, w.window, 0};
    if (w.window > 0) {
      t.position = IsValidClusterId(id) ? RolloutPosition(id, w.target) : 1.0;
      t.appears += static_cast<int64_t>(std::ceil(t.position * static_cast<double>(t.window)));
    }
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(), [](const EdgeTiming& a, const EdgeTiming& b) {
    return std::tie(a.appears, a.from, a.to) < std::tie(b.appears, b.from, b.to);
  });
  return out;
}

double RolloutPosition(std::string_view cluster_id, std::string_view target_version) {
  std::string input;
  input.reserve(cluster_id.size() + 1 + target_version.size());
  input.append(cluster_id).append(1, '\0').append(target_version);
  unsigned char digest[32];
  Sha256(input, digest);
  uint64_t top = 0;  // the first 52 bits (13 hex digits)
  for (int i = 0; i < 7; ++i) top = (top << 8) | digest[i];
  top >>= 4;
  return static_cast<double>(top) / static_cast<double>(1ULL << 52);
}

std::vector<double> RolloutPositions(std::string_view id, const std::vector<std::string>& targets) {
  std::vector<double> u(targets.size(), 1.0);
  if (!IsValidClusterId(id)) return u;
  for (size_t i = 0; i < targets.size(); ++i) u[i] = RolloutPosition(id, targets[i]);
  return u;
}

// 8-4-4-4-12 hex digits, either case. By hand rather than RE2: it runs on every
// per-cluster request, where the regex was a measurable share of the request's work.
bool IsValidClusterId(std::string_view id) {
  if (id.size() != 36) return false;
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

PhasedRollout::PhasedRollout(std::shared_ptr<const env::Clock> clock, std::string key_prefix)
    : clock_(std::move(clock)),
      key_prefix_(key_prefix),
      start_key_(StartKey(key_prefix)),
      rollouts_key_(RolloutsKey(key_prefix)) {}

bool PhasedRollout::AppliesTo(const Graph& graph) const {
  // Either key: a graph with rules but no start still needs its rules stripped.
  for (const Node& n : graph.nodes()) {
    if (n.metadata.count(start_key_) || n.metadata.count(rollouts_key_)) return true;
  }
  return false;
}

namespace {

// The nodes in `channel` at `now` and the edges and conditional-edge references that
// `keep` accepts given their window there; internal keys still present. With `keep` one
// cluster's visibility this is PhasedRollout's answer; with "some cluster sees it", the
// widest view of a PhasedSpan.
template <typename Keep>
Result<Graph> Select(const Graph& graph, std::string_view channel, int64_t now, const std::string& start_key,
                     const std::string& rollouts_key, Keep keep) {
  CINCINNATI_ASSIGN_OR_RETURN(Phasing input_phasing, Phasing::Of(graph, start_key, rollouts_key));
  Graph out = graph.Retain([&](NodeIndex i) { return input_phasing.StartOf(i, channel) <= now; });
  CINCINNATI_ASSIGN_OR_RETURN(Phasing phasing, Phasing::Of(out, start_key, rollouts_key));
  for (const Edge& e : out.Edges()) {
    if (!keep(WindowOf(out, phasing, e.from, e.to, channel))) out.RemoveEdge(e.from, e.to);
  }
  out.FilterConditionalEdges([&](const ConditionalEdgeRef& ref) {
    auto from = out.Find(ref.from), to = out.Find(ref.to);
    return from && to && keep(WindowOf(out, phasing, *from, *to, channel));
  });
  return out;
}

void EraseKeys(Graph& graph, const std::string& start_key, const std::string& rollouts_key) {
  for (NodeIndex i = 0; i < graph.node_count(); ++i) {
    graph.mutable_metadata(i).erase(start_key);
    graph.mutable_metadata(i).erase(rollouts_key);
  }
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? INT64_MAX : INT64_MIN;
}

// Beyond 2^52 seconds int64 and double comparisons can disagree; a span refuses such
// instants (no graph-data date comes near: years 0000-9999 are below 2^38).
bool Representable(int64_t t) { return t == INT64_MIN || t == INT64_MAX || (t > -(1LL << 52) && t < (1LL << 52)); }

}  // namespace

Result<Graph> PhasedRollout::ApplyTo(const Graph& graph, TransformContext& context) const {
  CINCINNATI_ASSIGN_OR_RETURN(std::string channel, RequiredParam(context.parameters, kChannelParam));
  const int64_t now = Now();
  std::string id;
  if (auto it = context.parameters.find("id"); it != context.parameters.end() && IsValidClusterId(it->second)) {
    id = it->second;
  }
  // Each edge appears for this cluster at its begin + u * window.
  std::map<std::string, double, std::less<>> positions;
  auto visible = [&](const EdgeWindow& w) {
    if (w.window == 0) return now >= w.begin;
    auto [it, inserted] = positions.emplace(w.target, 1.0);
    if (inserted && !id.empty()) it->second = RolloutPosition(id, w.target);
    return SeesPhasedEdge(now, w.begin, w.window, it->second);
  };
  CINCINNATI_ASSIGN_OR_RETURN(Graph out, Select(graph, channel, now, start_key_, rollouts_key_, visible));
  EraseKeys(out, start_key_, rollouts_key_);
  return out;
}

Result<PhasedSpan> PhasedRollout::SpanAt(const Graph& input, const Parameters& parameters, int64_t now) const {
  CINCINNATI_ASSIGN_OR_RETURN(std::string channel, RequiredParam(parameters, kChannelParam));
  PhasedSpan span;
  // The instants at which any node or edge changes class: starts, window openings and
  // ends, over the whole input (edges to releases not started yet included).
  CINCINNATI_ASSIGN_OR_RETURN(Phasing phasing, Phasing::Of(input, start_key_, rollouts_key_));
  bool representable = Representable(now);
  auto bound = [&](int64_t t) {
    representable &= Representable(t);
    if (t == INT64_MIN) return;
    if (t <= now) {
      span.from = std::max(span.from, t);
    } else {
      span.until = std::min(span.until, t);
    }
  };
  auto bound_edge = [&](NodeIndex from, NodeIndex to) {
    EdgeWindow w = WindowOf(input, phasing, from, to, channel);
    bound(w.begin);
    // An edge without a start is there from the beginning of time, window or not.
    if (w.window > 0 && w.begin != INT64_MIN) bound(SaturatingAdd(w.begin, w.window));
  };
  for (NodeIndex i = 0; i < input.node_count(); ++i) bound(phasing.StartOf(i, channel));
  for (const Edge& e : input.Edges()) bound_edge(e.from, e.to);
  for (const ConditionalEdge& group : input.conditional_edges()) {
    for (const ConditionalEdgeRef& ref : group.edges) {
      auto from = input.Find(ref.from), to = input.Find(ref.to);
      if (from && to) bound_edge(*from, *to);
    }
  }
  if (!representable) return Status::InvalidArgument("phased rollout instants beyond 2^52 seconds");
  // Some cluster sees an edge unless even position 0 does not.
  auto seen_by_some = [&](const EdgeWindow& w) {
    return w.window == 0 ? now >= w.begin : SeesPhasedEdge(now, w.begin, w.window, 0.0);
  };
  CINCINNATI_ASSIGN_OR_RETURN(span.widest, Select(input, channel, now, start_key_, rollouts_key_, seen_by_some));
  CINCINNATI_ASSIGN_OR_RETURN(Phasing widest, Phasing::Of(span.widest, start_key_, rollouts_key_));
  std::map<std::string, uint32_t, std::less<>> target_index;
  auto rule = [&](NodeIndex from, NodeIndex to) {
    EdgeWindow w = WindowOf(span.widest, widest, from, to, channel);
    PhasedSpan::Rule r;
    // Seen by every cluster, position 1 (no id) included.
    if (w.window == 0 || SeesPhasedEdge(now, w.begin, w.window, 1.0)) return r;
    auto [slot, inserted] = target_index.emplace(w.target, static_cast<uint32_t>(span.targets.size()));
    if (inserted) span.targets.push_back(w.target);
    return PhasedSpan::Rule{true, w.begin, w.window, slot->second};
  };
  for (const Edge& e : span.widest.Edges()) span.edges.push_back(rule(e.from, e.to));
  for (const ConditionalEdge& group : span.widest.conditional_edges()) {
    auto& refs = span.refs.emplace_back();
    for (const ConditionalEdgeRef& ref : group.edges) refs.push_back(rule(*span.widest.Find(ref.from), *span.widest.Find(ref.to)));
  }
  EraseKeys(span.widest, start_key_, rollouts_key_);
  return span;
}

StepReason PhasedRollout::ExplainLoss(const StepLoss& loss) const {
  const Parameters& parameters = loss.context.parameters;
  auto channel_param = parameters.find(kChannelParam);
  const std::string channel = channel_param == parameters.end() ? "" : channel_param->second;
  if (!loss.to) {
    StepReason r{"not_started", fmt::format("{} has not entered channel {} yet", loss.from_version, channel)};
    const Metadata& metadata = loss.before.node(loss.from).metadata;
    if (auto it = metadata.find(start_key_); it != metadata.end()) {
      if (auto starts = DecodePhasedStarts(it->second); starts.ok()) {
        for (const ChannelStart& s : *starts) {
          if (s.channel != channel) continue;
          r.visible_from = s.start;
          r.message = fmt::format("{} enters channel {} at {}", loss.from_version, channel, FormatUnixSeconds(s.start));
        }
      }
    }
    return r;
  }
  const std::string& a = loss.from_version;
  const std::string& b = loss.to_version;
  StepReason r{"phased", fmt::format("{} -> {} is not visible yet", a, b)};
  auto id = parameters.find("id");
  auto timings = EdgeTimings(loss.before, channel, id == parameters.end() ? "" : id->second, key_prefix_);
  if (!timings.ok()) {
    r.message = fmt::format("{} -> {} is not visible yet: {}", a, b, timings.status().message());
    return r;
  }
  const std::string& from = loss.before.node(loss.from).version;
  const std::string& to = loss.before.node(*loss.to).version;
  for (const EdgeTiming& t : *timings) {
    if (t.from != from || t.to != to) continue;
    r.visible_from = t.appears;
    if (t.window <= 0) {
      r.message = fmt::format("{} -> {} appears at {}, when both releases are in channel {}", a, b, FormatUnixSeconds(t.appears), channel);
      return r;
    }
    const int64_t begin = t.appears - static_cast<int64_t>(std::ceil(t.position * static_cast<double>(t.window)));
    RolloutWindow window{channel, from, to, begin, t.window};
    r.share_now = window.Fraction(Now());
    r.complete_at = begin + t.window;
    r.message = fmt::format(
        "{} -> {} is rolling out in phases: this cluster sees it from {}{}; {:.1f}% of clusters see it now; every "
        "cluster from {}",
        a, b, FormatUnixSeconds(t.appears), id == parameters.end() ? " (no id: the end of the window)" : "", *r.share_now * 100,
        FormatUnixSeconds(*r.complete_at));
    return r;
  }
  return r;
}

}  // namespace cincinnati::policy
