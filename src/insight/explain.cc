#include "insight/explain.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/guard.h"
#include "core/hotfix_rule.h"
#include "core/internal_metadata.h"
#include "core/semver.h"
#include "core/strings.h"
#include "graph-data/time_format.h"
#include "insight/builder_records.h"
#include "policy/phased_rollout.h"

namespace cincinnati::insight {
namespace {

const std::string kPrefix(kDefaultKeyPrefix);

// The graph before the chain (stage 0) and after each of its steps.
class Stages {
 public:
  static Result<Stages> Run(const TransformChain& chain, const Graph& builder_graph, TransformContext& context) {
    Stages s;
    s.first_ = &builder_graph;
    const Graph* previous = &builder_graph;
    for (size_t i = 0; i < chain.size(); ++i) {
      auto next = RunStepsOn(chain, i, i + 1, *previous, context);
      if (!next.ok()) return next.status();
      s.after_.push_back(std::make_unique<Graph>(std::move(next).value()));
      s.steps_.push_back(chain[i].get());
      previous = s.after_.back().get();
    }
    return s;
  }
  size_t size() const { return after_.size() + 1; }
  const Graph& at(size_t i) const { return i == 0 ? *first_ : *after_[i - 1]; }
  const Graph& last() const { return at(size() - 1); }
  // The step that made stage i (i >= 1).
  const GraphTransform& step(size_t i) const { return *steps_[i - 1]; }

 private:
  const Graph* first_ = nullptr;
  std::vector<std::unique_ptr<Graph>> after_;
  std::vector<const GraphTransform*> steps_;
};

struct EdgeState {
  std::optional<NodeIndex> from, to;
  bool edge = false, conditional = false;
  std::vector<std::string> risks;
};

EdgeState StateIn(const Graph& g, const std::string& from, const std::string& to, const std::string& arch) {
  EdgeState s;
  s.from = FindRelease(g, from, arch);
  s.to = FindRelease(g, to, arch);
  if (s.from && !g.node(*s.from).concrete) s.from.reset();
  if (s.to && !g.node(*s.to).concrete) s.to.reset();
  if (!s.from || !s.to) return s;
  s.edge = g.HasEdge(*s.from, *s.to);
  const std::string& a = g.node(*s.from).version;
  const std::string& b = g.node(*s.to).version;
  for (const ConditionalEdge& group : g.conditional_edges()) {
    for (const ConditionalEdgeRef& ref : group.edges) {
      if (ref.from != a || ref.to != b) continue;
      s.conditional = true;
      for (const Risk& r : group.risks) s.risks.push_back(r.name);
    }
  }
  return s;
}

Reason Because(std::string kind, std::string message = {}, std::string step = {}) {
  Reason r;
  r.kind = std::move(kind);
  r.message = std::move(message);
  r.step = std::move(step);
  return r;
}

std::string Time(int64_t t) { return graphdata::FormatDateTime(t); }

std::string Channels(const Graph& g, NodeIndex i) {
  auto it = g.node(i).metadata.find(PrefixedKey(kPrefix, kChannelsSuffix));
  return it == g.node(i).metadata.end() || it->second.empty() ? "no channel" : it->second;
}

class Explainer {
 public:
  Explainer(const Stages& stages, const BuilderRecords& records, const ExplainRequest& request, std::string channel,
            std::string arch)
      : stages_(stages), records_(records), request_(request), channel_(std::move(channel)), arch_(std::move(arch)) {}

  EdgeExplanation Edge(const std::string& to) const {
    const std::string& from = request_.version;
    EdgeExplanation out{from, to, Verdict::kNotOffered, {}};
    EdgeState final_state = StateIn(stages_.last(), from, to, arch_);
    if (final_state.edge) {
      out.verdict = Verdict::kOffered;
      out.reasons.push_back(Because("offered", fmt::format("{} -> {} is offered", from, to)));
      return out;
    }
    if (final_state.conditional) {
      out.verdict = Verdict::kConditional;
      Reason r = Because("conditional");
      r.risks = final_state.risks;
      std::string files;
      for (const BlockRecord& b : records_.BlocksMatching(from, to)) {
        if (b.conditional) files += (files.empty() ? " (" : ", ") + b.file;
      }
      r.message = fmt::format("offered as a conditional update: risk{} {}{}{}", r.risks.size() == 1 ? "" : "s",
                              fmt::join(r.risks, ", "), files, files.empty() ? "" : ")");
      out.reasons.push_back(std::move(r));
      return out;
    }
    // Each of the two releases and the edge is explained where it is lost.
    EdgeState previous = StateIn(stages_.at(0), from, to, arch_);
    if (!previous.from) out.reasons.push_back(Missing(from));
    if (!previous.to) out.reasons.push_back(Missing(to));
    if (previous.from && previous.to && !previous.edge && !previous.conditional) out.reasons.push_back(NoEdge(from, to));
    for (size_t i = 1; i < stages_.size(); ++i) {
      EdgeState now = StateIn(stages_.at(i), from, to, arch_);
      if (previous.from && !now.from) out.reasons.push_back(LostRelease(i, *previous.from));
      if (previous.to && !now.to) out.reasons.push_back(LostRelease(i, *previous.to));
      if (now.from && now.to && (previous.edge || previous.conditional) && !now.edge && !now.conditional) {
        out.reasons.push_back(LostEdge(i, *previous.from, *previous.to));
      }
      previous = std::move(now);
    }
    if (out.reasons.empty()) {  // not reached: something above lost it
      out.reasons.push_back(Because("removed_by_step", "not in the answer"));
    }
    return out;
  }

 private:
  Reason Missing(const std::string& version) const {
    if (records_.RemovedRelease(version)) {
      return Because("removed_release", fmt::format("{} was removed from the graph by release.remove", version));
    }
    return Because("not_in_graph", fmt::format("{} is not a release of the graph for arch {}", version, arch_));
  }

  Reason NoEdge(const std::string& from, const std::string& to) const {
    if (auto removal = records_.Removal(from, to)) {
      Reason r = Because(removal->cause == kPreviousRemoveRegexSuffix && !removal->blocks.empty() ? "blocked"
                                                                                                 : "removed_by_metadata",
                         fmt::format("{} -> {} is {}", from, to, removal->Describe()));
      if (!removal->blocks.empty()) {
        r.file = removal->blocks.back().file;  // an unconditional block replaces earlier ones
        r.rule = removal->blocks.back().from_regex;
      }
      return r;
    }
    return Because("no_update", fmt::format("no update from {} to {}: the release metadata of {} does not list {} in "
                                         "previous (nor {} in next), and no graph-data adds it",
                                         from, to, to, from, from));
  }

  Reason LostRelease(size_t stage, NodeIndex node) const {
    const GraphTransform& step = stages_.step(stage);
    const Graph& before = stages_.at(stage - 1);
    const std::string version = ViewVersion(before.node(node).version, arch_);
    Reason r = Because("", "", std::string(step.name()));
    if (step.name() == "channel-filter") {
      r.kind = "not_in_channel";
      r.message = fmt::format("{} is not in channel {} (it is in {})", version, channel_, Channels(before, node));
    } else if (step.name() == "arch-filter") {
      r.kind = "not_for_arch";
      r.message = fmt::format("{} is not built for arch {}", version, arch_);
    } else if (step.name() == "hotfix-filter") {
      r.kind = "hotfix";
      r.message = fmt::format("{} is a hotfix ({}) that this cluster may not see{}", version, HotfixNames(before, node),
                              request_.parameters.count("id") ? "" : ": a request without an id never sees hotfixes");
    } else if (step.name() == "phased-rollout") {
      r.kind = "not_started";
      r.visible_from = StartIn(before, node);
      r.message = r.visible_from ? fmt::format("{} enters channel {} at {}", version, channel_, Time(*r.visible_from))
                                 : fmt::format("{} has not entered channel {} yet", version, channel_);
    } else if (step.name() == "channel-target") {
      r.kind = "channel_target";
      r.message = fmt::format("{} is off every path from {} to the channel's target{}", version, request_.version,
                              TargetOf(stages_.at(stage)));
    } else {
      r.kind = "removed_by_step";
      r.message = fmt::format("{} is removed by the policy step {}", version, step.name());
    }
    return r;
  }

  Reason LostEdge(size_t stage, NodeIndex from, NodeIndex to) const {
    const GraphTransform& step = stages_.step(stage);
    const Graph& before = stages_.at(stage - 1);
    const std::string a = ViewVersion(before.node(from).version, arch_);
    const std::string b = ViewVersion(before.node(to).version, arch_);
    Reason r = Because("", "", std::string(step.name()));
    if (step.name() == "phased-rollout") return Phased(step, before, from, to, std::move(r));
    if (step.name() == "channel-target") {
      r.kind = "channel_target";
      r.message = fmt::format("{} -> {} leads away from the channel's target{}", a, b, TargetOf(stages_.at(stage)));
      return r;
    }
    r.kind = "removed_by_step";
    r.message = fmt::format("{} -> {} is removed by the policy step {}", a, b, step.name());
    return r;
  }

  Reason Phased(const GraphTransform& step, const Graph& before, NodeIndex from, NodeIndex to, Reason r) const {
    const auto* phased = dynamic_cast<const policy::PhasedRollout*>(&step);
    const int64_t now = phased ? phased->Now() : 0;
    auto id = request_.parameters.find("id");
    auto timings = policy::EdgeTimings(before, channel_, id == request_.parameters.end() ? "" : id->second,
                                       phased ? phased->key_prefix() : kPrefix);
    const std::string& a = before.node(from).version;
    const std::string& b = before.node(to).version;
    r.kind = "phased";
    if (!timings.ok()) {
      r.message = fmt::format("{} -> {} is not visible yet: {}", a, b, timings.status().message());
      return r;
    }
    for (const policy::EdgeTiming& t : *timings) {
      if (t.from != a || t.to != b) continue;
      r.visible_from = t.appears;
      if (t.window <= 0) {
        r.message = fmt::format("{} -> {} appears at {}, when both releases are in channel {}", a, b, Time(t.appears), channel_);
        return r;
      }
      const int64_t begin = t.appears - static_cast<int64_t>(std::ceil(t.position * static_cast<double>(t.window)));
      policy::RolloutWindow window{channel_, a, b, begin, t.window};
      r.share_now = window.Fraction(now);
      r.complete_at = begin + t.window;
      r.message = fmt::format(
          "{} -> {} is rolling out in phases: this cluster sees it from {}{}; {:.1f}% of clusters see it now; every "
          "cluster from {}",
          a, b, Time(t.appears), id == request_.parameters.end() ? " (no id: the end of the window)" : "",
          *r.share_now * 100, Time(*r.complete_at));
      return r;
    }
    r.message = fmt::format("{} -> {} is not visible yet", a, b);
    return r;
  }

  std::optional<int64_t> StartIn(const Graph& g, NodeIndex node) const {
    auto it = g.node(node).metadata.find(PrefixedKey(kPrefix, kPhasedStartSuffix));
    if (it == g.node(node).metadata.end()) return std::nullopt;
    auto starts = DecodePhasedStarts(it->second);
    if (!starts.ok()) return std::nullopt;
    for (const ChannelStart& s : *starts) {
      if (s.channel == channel_) return s.start;
    }
    return std::nullopt;
  }

  static std::string HotfixNames(const Graph& g, NodeIndex node) {
    auto it = g.node(node).metadata.find(PrefixedKey(kPrefix, kHotfixRulesSuffix));
    if (it == g.node(node).metadata.end()) return "for other customers";
    auto rules = DecodeHotfixRules(it->second);
    if (!rules.ok()) return "for other customers";
    std::vector<std::string> names;
    for (const HotfixRule& rule : *rules) names.push_back(rule.name);
    return fmt::format("{}, for other customers", fmt::join(names, ", "));
  }

  // " 4.13.3": the one release without successors of a target view.
  std::string TargetOf(const Graph& view) const {
    std::optional<std::string> target;
    for (NodeIndex i = 0; i < view.node_count(); ++i) {
      if (view.successors(i).empty() && !view.predecessors(i).empty()) target = view.node(i).version;
    }
    return target ? " " + ViewVersion(*target, arch_) : "";
  }

  const Stages& stages_;
  const BuilderRecords& records_;
  const ExplainRequest& request_;
  std::string channel_, arch_;
};

std::string Param(const Parameters& p, std::string_view name, std::string fallback) {
  auto it = p.find(name);
  return it == p.end() ? fallback : it->second;
}

// Releases newer than `version` in the channel's view for the arch (the stage after the
// channel and arch filters) or after it in the builder graph.
std::vector<std::string> Candidates(const TransformChain& chain, const Stages& stages, const std::string& version,
                                    const std::string& arch) {
  size_t view_stage = 0;
  for (size_t i = 0; i < chain.size(); ++i) {
    if (chain[i]->name() == "channel-filter" || chain[i]->name() == "arch-filter") view_stage = i + 1;
  }
  std::set<std::string> found;
  const Graph& view = stages.at(view_stage);
  const std::string suffix = "+" + arch;
  for (const Node& n : view.nodes()) {
    if (n.concrete && (n.version.find('+') == std::string::npos || n.version.ends_with(suffix))) {
      found.insert(ViewVersion(n.version, arch));
    }
  }
  if (auto node = FindRelease(stages.at(0), version, arch)) {
    for (NodeIndex s : stages.at(0).successors(*node)) found.insert(ViewVersion(stages.at(0).node(s).version, arch));
  }
  auto base = Version::Parse(version);
  std::vector<std::pair<std::optional<Version>, std::string>> out;
  for (const std::string& v : found) {
    auto parsed = Version::Parse(v);
    if (v == version || (base.ok() && parsed.ok() && !(*base < *parsed))) continue;
    out.emplace_back(parsed.ok() ? std::optional<Version>(*parsed) : std::nullopt, v);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    if (a.first && b.first && !(*a.first == *b.first)) return *a.first < *b.first;
    return a.second < b.second;
  });
  std::vector<std::string> versions;
  for (auto& [parsed, v] : out) versions.push_back(std::move(v));
  return versions;
}

}  // namespace

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kOffered: return "offered";
    case Verdict::kConditional: return "conditional";
    case Verdict::kNotOffered: return "not_offered";
  }
  return "not_offered";
}

Result<Explanation> Explain(const TransformChain& chain, const Graph& builder_graph, const ExplainRequest& request) {
  if (request.version.empty()) return Status::MissingParams("version");
  TransformContext context;
  context.parameters = request.parameters;
  context.parameters["version"] = request.version;
  context.entitlements = request.entitlements;
  CINCINNATI_ASSIGN_OR_RETURN(Stages stages, Stages::Run(chain, builder_graph, context));
  Explanation out;
  out.channel = Param(request.parameters, "channel", "");
  out.arch = Param(request.parameters, "arch", "amd64");
  out.version = request.version;
  BuilderRecords records(builder_graph, out.arch);
  Explainer explainer(stages, records, request, out.channel, out.arch);
  std::vector<std::string> targets = request.to ? std::vector<std::string>{*request.to}
                                                : Candidates(chain, stages, request.version, out.arch);
  for (const std::string& to : targets) out.edges.push_back(explainer.Edge(to));
  return out;
}

}  // namespace cincinnati::insight
