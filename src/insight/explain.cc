#include "insight/explain.h"

#include <algorithm>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/guard.h"
#include "core/semver.h"
#include "core/strings.h"
#include "insight/builder_records.h"
#include "policy/default_chain.h"

namespace cincinnati::insight {
namespace {

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

class Explainer {
 public:
  Explainer(const Stages& stages, const BuilderRecords& records, const ExplainRequest& request,
            const TransformContext& context, std::string arch, const std::set<std::string>& hidden)
      : stages_(stages), records_(records), request_(request), context_(context), arch_(std::move(arch)), hidden_(hidden) {}

  EdgeExplanation Edge(const std::string& to) const {
    const std::string& from = request_.version;
    EdgeExplanation out{from, to, Verdict::kNotOffered, {}};
    if (hidden_.count(to)) {  // said as of a release that does not exist
      out.reasons.push_back(Because("not_in_graph", fmt::format("{} is not a release of the graph for arch {}", to, arch_)));
      return out;
    }
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
      if (previous.from && !now.from) out.reasons.push_back(LostAt(i, *previous.from, std::nullopt));
      if (previous.to && !now.to) out.reasons.push_back(LostAt(i, *previous.to, std::nullopt));
      if (now.from && now.to && (previous.edge || previous.conditional) && !now.edge && !now.conditional) {
        out.reasons.push_back(LostAt(i, *previous.from, *previous.to));
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

  // The step that made `stage` says why it took the release (`to` empty) or the edge out.
  Reason LostAt(size_t stage, NodeIndex from, std::optional<NodeIndex> to) const {
    const GraphTransform& step = stages_.step(stage);
    const Graph& before = stages_.at(stage - 1);
    StepLoss loss{before,
                  stages_.at(stage),
                  from,
                  to,
                  ViewVersion(before.node(from).version, arch_),
                  to ? ViewVersion(before.node(*to).version, arch_) : std::string(),
                  context_};
    StepReason why = step.ExplainLoss(loss);
    Reason r = Because(std::move(why.kind), std::move(why.message), std::string(step.name()));
    r.visible_from = why.visible_from;
    r.share_now = why.share_now;
    r.complete_at = why.complete_at;
    return r;
  }

  const Stages& stages_;
  const BuilderRecords& records_;
  const ExplainRequest& request_;
  const TransformContext& context_;  // what the chain ran with
  std::string arch_;
  const std::set<std::string>& hidden_;  // releases the asker may not know of
};

// The releases (as the view names them) that a step with secret removals took out: for
// the asker, they do not exist.
std::set<std::string> HiddenReleases(const Stages& stages, const std::string& arch) {
  std::set<std::string> hidden;
  for (size_t i = 1; i < stages.size(); ++i) {
    if (!stages.step(i).removals_are_secret()) continue;
    const Graph& before = stages.at(i - 1);
    const Graph& after = stages.at(i);
    for (const Node& n : before.nodes()) {
      if (!n.concrete || after.Find(n.version)) continue;
      hidden.insert(n.version);
      hidden.insert(ViewVersion(n.version, arch));
    }
  }
  return hidden;
}

std::string Param(const Parameters& p, std::string_view name, std::string fallback) {
  auto it = p.find(name);
  return it == p.end() ? fallback : it->second;
}

// Releases newer than `version` in the channel's view for the arch (the stage after the
// channel and arch filters) or after it in the builder graph.
size_t ViewStage(const TransformChain& chain) {
  size_t view_stage = 0;
  for (size_t i = 0; i < chain.size(); ++i) {
    if (chain[i]->name() == "channel-filter" || chain[i]->name() == "arch-filter") view_stage = i + 1;
  }
  return view_stage;
}

std::vector<std::string> Candidates(const TransformChain& chain, const Stages& stages, const std::string& version,
                                    const std::string& arch, const std::set<std::string>& hidden) {
  std::set<std::string> found;
  const Graph& view = stages.at(ViewStage(chain));
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
    if (v == version || hidden.count(v) || (base.ok() && parsed.ok() && !(*base < *parsed))) continue;
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

namespace {

// The releases of a view the asker may know of, in version order.
std::vector<std::string> ReleasesOf(const Graph& view, const std::set<std::string>& hidden) {
  std::vector<std::string> releases;
  for (const Node& n : view.nodes()) {
    if (n.concrete && !hidden.count(n.version)) releases.push_back(n.version);
  }
  std::sort(releases.begin(), releases.end(), VersionNameLess);
  return releases;
}

}  // namespace

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
  // A channel with no release for the arch (a mistyped name, say): one sentence, as a
  // path says it, rather than "not in channel" for every release.
  const Graph& view = stages.at(ViewStage(chain));
  if (ViewStage(chain) > 0 && std::none_of(view.nodes().begin(), view.nodes().end(), [](const Node& n) { return n.concrete; })) {
    // An unknown channel or arch, said as every command says it.
    CINCINNATI_RETURN_IF_ERROR(policy::CheckChannelsAndArch(builder_graph, {out.channel}, out.arch));
    out.stop = "not_in_channel";
    out.message = fmt::format("no releases in channel {} for {}", out.channel, out.arch);
    return out;
  }
  BuilderRecords records(builder_graph, out.arch);
  const std::set<std::string> hidden = HiddenReleases(stages, out.arch);
  // A version that is no release at all (a typo), or one the asker may not know of: one
  // sentence naming what the channel has, rather than "not a release of the graph" for
  // every newer release. A release of the graph outside the channel is explained step
  // by step below.
  const bool unknown = !view.Find(request.version) && !FindRelease(stages.at(0), request.version, out.arch) &&
                       !records.RemovedRelease(request.version);
  if (ViewStage(chain) > 0 && (unknown || hidden.count(request.version))) {
    out.stop = "not_in_channel";
    out.message = policy::NotAReleaseOf(request.version, out.channel, out.arch, ReleasesOf(view, hidden));
    return out;
  }
  Explainer explainer(stages, records, request, context, out.arch, hidden);
  std::vector<std::string> targets = request.to ? std::vector<std::string>{*request.to}
                                                : Candidates(chain, stages, request.version, out.arch, hidden);
  for (const std::string& to : targets) out.edges.push_back(explainer.Edge(to));
  return out;
}

}  // namespace cincinnati::insight
