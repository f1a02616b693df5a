// The policy_chain fuzz entry: a graph builder's graph (hostile internal metadata
// included) through the publish check and, when it passes, through the whole default
// policy chain with per-cluster parameters, both directly and through the server's
// view cache. What the check accepts, the chain must process: no crash, no internal
// error, and the cached answer equal to the computed one, plain and inflated from its
// gzip, for several cluster ids at several instants around the phased windows (one
// cache whose clock moves, so answer pieces are cut again as time leaves each span).
#include "policy_chain.h"

#include "gunzip.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>

#include "core/graph_check.h"
#include "core/graph_json.h"
#include "core/metadata_keys.h"
#include "core/strings.h"
#include "env/clock.h"
#include "insight/explain.h"
#include "insight/update_paths.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"
#include "policy/channel_target.h"
#include "policy/hotfix_filter.h"
#include "policy/phased_rollout.h"
#include "service/view_cache.h"

namespace cincinnati::fuzz {
namespace {

#define CHAIN_CHECK(cond, what)                                                \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "fuzz property violated: %s (%s)\n", what, #cond);  \
      std::abort();                                                            \
    }                                                                          \
  } while (0)

constexpr int64_t kNow = 1700000000;  // inside or around most phased windows of the seeds

TransformChain DefaultChain(std::shared_ptr<const env::Clock> clock) {
  TransformChain chain;
  chain.push_back(std::make_unique<policy::ChannelFilter>());
  chain.push_back(std::make_unique<policy::ArchFilter>());
  chain.push_back(std::make_unique<policy::HotfixFilter>());
  chain.push_back(std::make_unique<policy::ChannelTarget>(std::set<std::string>{"*"}));
  chain.push_back(std::make_unique<policy::PhasedRollout>(std::move(clock)));
  return chain;
}

// Instants where per-cluster answers differ most: kNow, and the middle and ends of a
// few phased windows of the graph.
std::vector<int64_t> Instants(const Graph& graph) {
  std::vector<int64_t> out = {kNow};
  auto windows = policy::RolloutWindows(graph);
  if (!windows.ok()) return out;
  for (size_t i = 0; i < windows->size() && i < 3; ++i) {
    const policy::RolloutWindow& w = (*windows)[i];
    if (w.begin < -(1LL << 40) || w.begin > (1LL << 40) || w.duration > (1LL << 40)) continue;
    out.insert(out.end(), {w.begin, w.begin + w.duration / 2, w.begin + w.duration - 1});
  }
  return out;
}


// A few values of each parameter, taken from the graph so the chain has work to do.
struct Choices {
  std::vector<std::string> channels, arches, versions;
  std::vector<std::string> hotfixes;
};

Choices ChoicesOf(const Graph& graph) {
  std::set<std::string> channels, arches;
  const std::string channels_key = PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix);
  Choices c;
  for (const Node& n : graph.nodes()) {
    if (auto it = n.metadata.find(channels_key); it != n.metadata.end()) {
      for (std::string_view ch : Split(it->second, ',')) {
        if (channels.size() < 3) channels.emplace(TrimWhitespace(ch));
      }
    }
    if (auto it = n.metadata.find(std::string(kArchKey)); it != n.metadata.end() && arches.size() < 2) {
      arches.insert(it->second);
    }
    if (c.versions.size() < 2) c.versions.push_back(n.version.substr(0, n.version.find('+')));
  }
  c.channels.assign(channels.begin(), channels.end());
  c.arches.assign(arches.begin(), arches.end());
  if (c.channels.empty()) c.channels.push_back("stable-4.4");
  if (c.arches.empty()) c.arches.push_back("amd64");
  const policy::HotfixIndex index(graph);
  for (const HotfixRule& rule : index.rules()) c.hotfixes.push_back(rule.name);
  return c;
}

// Whether two nodes of the builder graph show as the same version in a view for `arch`
// ("1.0.0" and "1.0.0+amd64"): explanations then cannot tell which one a client meant.
bool AmbiguousVersions(const Graph& graph, const std::string& arch) {
  std::set<std::string> seen;
  for (const Node& n : graph.nodes()) {
    if (!seen.insert(insight::ViewVersion(n.version, arch)).second) return true;
  }
  return false;
}

// Explanations and paths on the answer a chain gave for `context`: the verdict is
// "offered" exactly when the answer has the edge, and every hop of a path is an edge
// of the answer.
void CheckInsight(const TransformChain& chain, const Graph& graph, const Graph& answer, const TransformContext& context) {
  auto version = context.parameters.find("version");
  if (version == context.parameters.end()) return;
  const std::string& arch = context.parameters.at("arch");
  insight::ExplainRequest request{context.parameters, context.entitlements, version->second, std::nullopt};
  request.parameters.erase("version");
  auto explained = insight::Explain(chain, graph, request);
  CHAIN_CHECK(explained.ok(), "what the chain answers, explain explains");
  if (!AmbiguousVersions(graph, arch)) {
    for (const insight::EdgeExplanation& e : explained->edges) {
      auto a = answer.Find(e.from), b = answer.Find(e.to);
      const bool edge = a && b && answer.HasEdge(*a, *b);
      CHAIN_CHECK(edge == (e.verdict == insight::Verdict::kOffered), "offered exactly when the answer has the edge");
      CHAIN_CHECK(!e.reasons.empty(), "every verdict has a reason");
    }
  }
  auto view = std::make_shared<const Graph>(answer);
  insight::PathFinder finder({{context.parameters.at("channel"), view}}, {});
  for (NodeIndex target = 0; target < answer.node_count() && target < 4; ++target) {
    insight::PathOptions options;
    options.alternatives = 3;
    options.max_expansions = 2000;
    insight::PathAnswer paths = finder.Find(version->second, answer.node(target).version, options);
    CHAIN_CHECK(!paths.paths.empty() || !paths.stop.empty(), "no path says why");
    for (const insight::UpdatePath& p : paths.paths) {
      for (const insight::PathHop& hop : p.hops) {
        auto a = answer.Find(hop.from), b = answer.Find(hop.to);
        CHAIN_CHECK(a && b && answer.HasEdge(*a, *b), "every hop is an edge of the answer");
      }
    }
  }
}

bool ClientError(const Status& s) {
  return s.code() == Status::Code::kInvalidParams || s.code() == Status::Code::kMissingParams ||
         s.code() == Status::Code::kArchVersion;
}

}  // namespace

int PolicyChain(const uint8_t* data, size_t size) {
  auto graph = ReadGraphJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!graph.ok()) return 0;
  const bool servable = CheckServable(*graph).ok();
  (void)policy::RolloutWindows(*graph);
  int64_t now = kNow;
  const auto clock = env::ManualClock::AtUnixSeconds(now);
  const TransformChain chain = DefaultChain(clock);
  const Choices choices = ChoicesOf(*graph);
  auto shared = std::make_shared<const Graph>(*graph);
  server::ViewCache cache(chain, shared, 64);
  if (servable) cache.Precompute(PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix), std::string(kArchKey));
  // One request: the chain's answer, its explanations (at kNow), and the cache's copy.
  auto check = [&](const TransformContext& context) {
    TransformContext copy = context;
    auto out = RunChainOn(chain, *graph, copy);
    if (!servable) return;  // the chain may refuse it, but must not crash
    CHAIN_CHECK(out.ok() || ClientError(out.status()), "a servable graph runs through the chain");
    if (!out.ok()) return;
    if (now == kNow) CheckInsight(chain, *graph, *out, context);
    std::string written = WriteGraphJson(*out, {.schema_version = 1});
    CHAIN_CHECK(ReadGraphJson(written).ok(), "an answer reads back");
    auto id = context.parameters.find("id");
    (void)policy::EdgeTimings(*graph, context.parameters.at("channel"), id == context.parameters.end() ? "" : id->second);
    auto cached = cache.Get(context.parameters, context.entitlements);
    if (!(cached.ok() && *(*cached)->body() == written)) {
      std::fprintf(stderr, "now=%lld\ncomputed: %s\ncached: %s\n", static_cast<long long>(now), written.c_str(),
                   cached.ok() ? (*cached)->body()->c_str() : cached.status().message().c_str());
    }
    CHAIN_CHECK(cached.ok() && *(*cached)->body() == written, "the cached answer is the computed one");
    CHAIN_CHECK(Gunzip(*(*cached)->Gzip()) == written, "the gzip answer inflates to the computed one");
  };
  for (int64_t instant : Instants(*graph)) {
    now = instant;
    clock->SetNow(env::Clock::SystemTime(std::chrono::seconds(now)));
    for (const std::string& channel : choices.channels) {
      for (const std::string& arch : choices.arches) {
        for (const char* id : {"", "8f5a3b1e-2c4d-4e6f-8a9b-0c1d2e3f4a5b", "00000000-0000-4000-8000-000000000000"}) {
          for (size_t v = 0; v <= choices.versions.size(); ++v) {
            TransformContext context;
            context.parameters = {{"channel", channel}, {"arch", arch}};
            if (*id) context.parameters["id"] = id;
            if (v < choices.versions.size()) context.parameters["version"] = choices.versions[v];
            context.entitlements.hotfixes = choices.hotfixes;
            check(context);
          }
        }
      }
    }
  }
  return 0;
}

}  // namespace cincinnati::fuzz
