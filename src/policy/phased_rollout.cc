#include "policy/phased_rollout.h"

#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include <re2/re2.h>

#include "core/semver.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "policy/params.h"

namespace cincinnati::policy {
namespace {

// The value for `channel` in "<channel>=<value>,..." lists.
std::optional<int64_t> StartIn(std::string_view list, std::string_view channel) {
  for (std::string_view item : Split(list, ',')) {
    size_t eq = item.find('=');
    if (eq != std::string_view::npos && item.substr(0, eq) == channel) {
      return std::stoll(std::string(item.substr(eq + 1)));
    }
  }
  return std::nullopt;
}

// The rules of `channel` in "<channel>:<criterion>=<seconds>,...;..." lists.
std::map<std::string, int64_t, std::less<>> RulesIn(std::string_view list, std::string_view channel) {
  std::map<std::string, int64_t, std::less<>> rules;
  for (std::string_view block : Split(list, ';')) {
    size_t colon = block.find(':');
    if (colon == std::string_view::npos || block.substr(0, colon) != channel) continue;
    for (std::string_view rule : Split(block.substr(colon + 1), ',')) {
      size_t eq = rule.find('=');
      if (eq != std::string_view::npos) rules[std::string(rule.substr(0, eq))] = std::stoll(std::string(rule.substr(eq + 1)));
    }
  }
  return rules;
}

// The one rule of the design for an edge in a channel: it begins at the later of its
// endpoints' starts; its window is the target's matching rule ("minor" when major or
// minor differ, else "patch"; then the default "*"), or 0 when none matches.
struct EdgeWindow {
  int64_t begin = INT64_MIN;
  int64_t window = 0;
  std::string target;  // target version without build, when phased
};

int64_t StartOf(const Node& n, const std::string& start_key, std::string_view channel) {
  auto it = n.metadata.find(start_key);
  return it == n.metadata.end() ? INT64_MIN : StartIn(it->second, channel).value_or(INT64_MIN);
}

EdgeWindow WindowOf(const Node& from, const Node& to, std::string_view channel, const std::string& start_key,
                    const std::string& rollouts_key) {
  EdgeWindow w;
  w.begin = std::max(StartOf(from, start_key, channel), StartOf(to, start_key, channel));
  auto it = to.metadata.find(rollouts_key);
  if (it == to.metadata.end()) return w;
  auto fv = Version::Parse(from.version), tv = Version::Parse(to.version);
  if (!fv.ok() || !tv.ok()) return w;
  auto rules = RulesIn(it->second, channel);
  bool minor = fv->major() != tv->major() || fv->minor() != tv->minor();
  auto rule = rules.find(minor ? "minor" : "patch");
  if (rule == rules.end()) rule = rules.find("*");
  if (rule == rules.end() || rule->second <= 0) return w;
  w.window = rule->second;
  w.target = tv->ToStringWithoutBuild();
  return w;
}

}  // namespace

std::vector<RolloutWindow> RolloutWindows(const Graph& graph, std::string_view key_prefix) {
  const std::string start_key = PrefixedKey(key_prefix, kPhasedStartSuffix);
  const std::string rollouts_key = PrefixedKey(key_prefix, kPhasedRolloutsSuffix);
  std::map<std::tuple<std::string, std::string, std::string>, RolloutWindow> windows;
  for (const Edge& e : graph.Edges()) {
    const Node& from = graph.node(e.from);
    const Node& to = graph.node(e.to);
    auto rollouts = to.metadata.find(rollouts_key);
    if (rollouts == to.metadata.end()) continue;
    for (std::string_view block : Split(rollouts->second, ';')) {
      std::string channel(block.substr(0, block.find(':')));
      // Both endpoints must be in the channel (a graph builder's graph holds them all).
      if (StartOf(from, start_key, channel) == INT64_MIN || StartOf(to, start_key, channel) == INT64_MIN) continue;
      EdgeWindow w = WindowOf(from, to, channel, start_key, rollouts_key);
      if (w.window == 0) continue;
      auto fv = Version::Parse(from.version);
      RolloutWindow r{channel, fv.ok() ? fv->ToStringWithoutBuild() : from.version, w.target, w.begin, w.window};
      windows.emplace(std::make_tuple(r.channel, r.from, r.to), r);
    }
  }
  std::vector<RolloutWindow> out;
  for (auto& [_, w] : windows) out.push_back(std::move(w));
  return out;
}

std::vector<EdgeTiming> EdgeTimings(const Graph& view, std::string_view channel, std::string_view id,
                                    std::string_view key_prefix) {
  const std::string start_key = PrefixedKey(key_prefix, kPhasedStartSuffix);
  const std::string rollouts_key = PrefixedKey(key_prefix, kPhasedRolloutsSuffix);
  std::vector<EdgeTiming> out;
  for (const Edge& e : view.Edges()) {
    const Node& from = view.node(e.from);
    const Node& to = view.node(e.to);
    EdgeWindow w = WindowOf(from, to, channel, start_key, rollouts_key);
    EdgeTiming t{from.version, to.version, w.begin, w.window, 0};
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

Clock SystemClock() {
  return [] {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
}

Clock FixedClock(int64_t t) {
  return [t] { return t; };
}

double RolloutPosition(std::string_view cluster_id, std::string_view target_version) {
  std::string hex = Sha256Hex(std::string(cluster_id) + '\0' + std::string(target_version)).substr(0, 13);
  return static_cast<double>(std::stoull(hex, nullptr, 16)) / static_cast<double>(1ULL << 52);
}

bool IsValidClusterId(std::string_view id) {
  static const RE2 kUuid("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
  return RE2::FullMatch(id, kUuid);
}

PhasedRollout::PhasedRollout(Clock now, std::string key_prefix)
    : now_(std::move(now)),
      start_key_(PrefixedKey(key_prefix, kPhasedStartSuffix)),
      rollouts_key_(PrefixedKey(key_prefix, kPhasedRolloutsSuffix)) {}

namespace {

// Per channel view: each node's start, and each edge's begin and window.
struct Plan {
  struct PlannedEdge {
    int64_t begin = 0;
    int64_t window = 0;  // 0: not phased
    size_t target = 0;   // index into targets
  };
  std::vector<int64_t> node_start;
  std::vector<PlannedEdge> edges;
  std::vector<std::string> targets;  // target versions without build
};

}  // namespace

std::shared_ptr<const void> PhasedRollout::Prepare(const Graph& input, const TransformContext& context) const {
  auto channel = context.parameters.find(std::string(kChannelParam));
  if (channel == context.parameters.end()) return nullptr;
  auto plan = std::make_shared<Plan>();
  std::map<std::string, size_t> target_index;
  for (const Node& n : input.nodes()) plan->node_start.push_back(StartOf(n, start_key_, channel->second));
  // Edges, then conditional edges: both are filtered by the same rule, so both are in
  // the key.
  std::vector<Edge> all = input.Edges();
  for (const ConditionalEdge& group : input.conditional_edges()) {
    for (const ConditionalEdgeRef& ref : group.edges) {
      auto from = input.Find(ref.from), to = input.Find(ref.to);
      if (from && to) all.push_back(Edge{*from, *to});
    }
  }
  for (const Edge& e : all) {
    EdgeWindow w = WindowOf(input.node(e.from), input.node(e.to), channel->second, start_key_, rollouts_key_);
    Plan::PlannedEdge pe{w.begin, w.window, 0};
    if (w.window > 0) {
      auto [slot, inserted] = target_index.emplace(w.target, plan->targets.size());
      if (inserted) plan->targets.push_back(w.target);
      pe.target = slot->second;
    }
    plan->edges.push_back(pe);
  }
  return plan;
}

std::optional<std::string> PhasedRollout::AnswerKey(const void* prepared, const TransformContext& context) const {
  const Plan& plan = *static_cast<const Plan*>(prepared);
  const int64_t now = now_();
  std::string id;
  if (auto it = context.parameters.find("id"); it != context.parameters.end() && IsValidClusterId(it->second)) {
    id = it->second;
  }
  std::vector<double> u(plan.targets.size(), -1);
  std::string key(1 + (plan.node_start.size() + plan.edges.size() + 7) / 8, '\0');
  size_t bit = 0;
  auto set = [&](bool on) {
    if (on) key[1 + bit / 8] = static_cast<char>(key[1 + bit / 8] | (1 << (bit % 8)));
    ++bit;
  };
  for (int64_t start : plan.node_start) set(start <= now);
  for (const Plan::PlannedEdge& e : plan.edges) {
    // Before or past its window an edge is the same for every cluster: no hashing.
    if (e.window == 0 || now < e.begin || now >= e.begin + e.window) {
      set(now >= e.begin + e.window);
      continue;
    }
    double& pos = u[e.target];
    if (pos < 0) pos = id.empty() ? 1.0 : RolloutPosition(id, plan.targets[e.target]);
    set(static_cast<double>(now) >= static_cast<double>(e.begin) + pos * static_cast<double>(e.window));
  }
  return key;
}

bool PhasedRollout::AppliesTo(const Graph& graph) const {
  for (const Node& n : graph.nodes()) {
    if (n.metadata.count(start_key_)) return true;
  }
  return false;
}

Result<Graph> PhasedRollout::ApplyTo(const Graph& graph, TransformContext& context) const {
  CINCINNATI_ASSIGN_OR_RETURN(std::string channel, RequiredParam(context.parameters, kChannelParam));
  const int64_t now = now_();
  std::string id;
  if (auto it = context.parameters.find("id"); it != context.parameters.end() && IsValidClusterId(it->second)) {
    id = it->second;
  }
  Graph out = graph.Retain([&](NodeIndex i) { return StartOf(graph.node(i), start_key_, channel) <= now; });
  // Each edge appears for this cluster at its begin + u * window.
  std::map<std::string, double, std::less<>> positions;
  auto visible = [&](NodeIndex from, NodeIndex to) {
    EdgeWindow w = WindowOf(out.node(from), out.node(to), channel, start_key_, rollouts_key_);
    if (w.window == 0) return now >= w.begin;
    auto [it, inserted] = positions.emplace(w.target, 1.0);
    if (inserted && !id.empty()) it->second = RolloutPosition(id, w.target);
    return static_cast<double>(now) >= static_cast<double>(w.begin) + it->second * static_cast<double>(w.window);
  };
  for (const Edge& e : out.Edges()) {
    if (!visible(e.from, e.to)) out.RemoveEdge(e.from, e.to);
  }
  out.FilterConditionalEdges([&](const ConditionalEdgeRef& ref) {
    auto from = out.Find(ref.from), to = out.Find(ref.to);
    return from && to && visible(*from, *to);
  });
  for (NodeIndex i = 0; i < out.node_count(); ++i) {
    out.mutable_metadata(i).erase(start_key_);
    out.mutable_metadata(i).erase(rollouts_key_);
  }
  return out;
}

}  // namespace cincinnati::policy
