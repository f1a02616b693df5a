// Benchmarks of update paths, explanations and pictures (src/insight, src/ui) on the
// generated 10,000-release input (generated_graph_data.h), with the policy engine's
// default chain at a fixed instant:
//   Explain: every target from 4.20.0 in stable-4.20 (the `explain` endpoint without `to`),
//            and one edge.
//   Path:    4.19.90 -> 4.20.79 in fast-4.20, and 4.10.90 -> 4.20.79 across the ten
//            channels fast-4.11..fast-4.20 (1,010 releases of amd64 on the way).
//   Svg:     a view laid out by Graphviz (dot) and rendered as SVG: an EUS channel (200
//            releases) and the 1,000 amd64 releases of 4.1..4.10 (about 25,000 edges).
//   BuilderRecords: every removed edge of the 10k graph with its blocked-edges rules.
#include <benchmark/benchmark.h>

#include <cstdio>

#include "generated_graph_data.h"
#include "insight/builder_records.h"
#include "insight/explain.h"
#include "insight/queries.h"
#include "policy/arch_filter.h"
#include "policy/default_chain.h"
#include "ui/graph_render.h"

namespace cincinnati::bench {
namespace {

constexpr int64_t kNow = 1767225600;  // 2026-01-01T00:00:00Z

const Graph& BuilderGraph() {
  static const Graph graph = GeneratedGraph();
  return graph;
}

TransformChain DefaultChain() { return policy::DefaultChain({}, env::ManualClock::AtUnixSeconds(kNow)); }

void Explain(benchmark::State& state, std::optional<std::string> to) {
  const TransformChain chain = DefaultChain();
  BuilderGraph();  // built once, outside the timing
  insight::ExplainRequest request{{{"channel", "stable-4.20"}, {"arch", "amd64"}}, {}, "4.20.0", to};
  size_t edges = 0;
  for (auto _ : state) {
    auto answer = insight::Explain(chain, BuilderGraph(), request);
    if (!answer.ok()) return state.SkipWithError(answer.status().message().c_str());
    edges = answer->edges.size();
    std::string json = insight::ExplanationJson(*answer);
    benchmark::DoNotOptimize(json);
  }
  state.counters["edges_explained"] = static_cast<double>(edges);
}

void BM_Explain_Generated10k_AllTargets(benchmark::State& state) { Explain(state, std::nullopt); }
BENCHMARK(BM_Explain_Generated10k_AllTargets)->Unit(benchmark::kMillisecond);

void BM_Explain_Generated10k_OneEdge(benchmark::State& state) { Explain(state, "4.20.50"); }
BENCHMARK(BM_Explain_Generated10k_OneEdge)->Unit(benchmark::kMillisecond);

void Path(benchmark::State& state, int first_minor, const std::string& from) {
  const TransformChain chain = DefaultChain();
  BuilderGraph();
  insight::PathQuery query;
  for (int minor = first_minor; minor <= 20; ++minor) query.channels.push_back("fast-4." + std::to_string(minor));
  query.from = from;
  query.to = "4.20.79";
  query.options.alternatives = static_cast<size_t>(state.range(0));
  size_t hops = 0, paths = 0;
  for (auto _ : state) {
    auto answer = insight::PlanPaths(chain, BuilderGraph(), query);
    if (!answer.ok()) return state.SkipWithError(answer.status().message().c_str());
    if (answer->paths.empty()) return state.SkipWithError(answer->message.c_str());
    hops = answer->paths.front().hops.size();
    paths = answer->paths.size();
    std::string json = insight::PathJson(*answer);
    benchmark::DoNotOptimize(json);
  }
  state.counters["hops"] = static_cast<double>(hops);
  state.counters["paths"] = static_cast<double>(paths);
}

void BM_Path_Generated10k_OneChannel(benchmark::State& state) { Path(state, 20, "4.19.90"); }
BENCHMARK(BM_Path_Generated10k_OneChannel)->Arg(1)->Arg(5)->Unit(benchmark::kMillisecond);

void BM_Path_Generated10k_TenChannels(benchmark::State& state) { Path(state, 11, "4.10.90"); }
BENCHMARK(BM_Path_Generated10k_TenChannels)->Arg(1)->Arg(5)->Unit(benchmark::kMillisecond);

// The amd64 releases of 4.1..4.`last_minor` with their edges and conditional edges.
Graph Amd64Minors(int last_minor) {
  TransformChain chain;
  chain.push_back(std::make_unique<policy::ArchFilter>());
  TransformContext context;
  context.parameters = {{"arch", "amd64"}};
  Graph all = RunChainOn(chain, BuilderGraph(), context).value();
  Graph out;
  std::vector<std::optional<NodeIndex>> kept(all.node_count());
  for (NodeIndex i = 0; i < all.node_count(); ++i) {
    int minor = 0, patch = 0;
    if (std::sscanf(all.node(i).version.c_str(), "4.%d.%d", &minor, &patch) == 2 && minor <= last_minor) {
      kept[i] = out.AddNode(all.node(i)).value();
    }
  }
  std::vector<Edge> edges;
  for (const Edge& e : all.Edges()) {
    if (kept[e.from] && kept[e.to]) edges.push_back(Edge{*kept[e.from], *kept[e.to]});
  }
  (void)out.AddEdges(edges);
  for (ConditionalEdge group : all.conditional_edges()) {
    std::erase_if(group.edges, [&](const ConditionalEdgeRef& r) { return !out.Find(r.from) || !out.Find(r.to); });
    if (!group.edges.empty()) out.mutable_conditional_edges().push_back(std::move(group));
  }
  return out;
}

Graph ChannelView(const std::string& channel) {
  TransformChain chain = DefaultChain();
  TransformContext context;
  context.parameters = {{"channel", channel}, {"arch", "amd64"}};
  return RunChainOn(chain, BuilderGraph(), context).value();
}

void RenderSvg(benchmark::State& state, const Graph& view) {
  size_t bytes = 0;
  for (auto _ : state) {
    auto svg = ui::RenderDot(ui::ViewDot(view, {}), "svg");
    if (!svg.ok()) return state.SkipWithError(svg.status().message().c_str());
    bytes = svg->size();
  }
  size_t conditional = 0;
  for (const ConditionalEdge& c : view.conditional_edges()) conditional += c.edges.size();
  state.counters["releases"] = static_cast<double>(view.node_count());
  state.counters["edges"] = static_cast<double>(view.edge_count() + conditional);
  state.counters["svg_bytes"] = static_cast<double>(bytes);
}

void BM_Svg_Eus200(benchmark::State& state) { RenderSvg(state, ChannelView("eus-4.21")); }
BENCHMARK(BM_Svg_Eus200)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_Svg_View1000(benchmark::State& state) { RenderSvg(state, Amd64Minors(10)); }
BENCHMARK(BM_Svg_View1000)->Unit(benchmark::kMillisecond)->Iterations(1);

// Every edge the builder removed, with the blocked-edges rules that removed it (what a
// path question reads to say which hops are blocked).
void BM_BuilderRecords_Generated10k_AllRemovals(benchmark::State& state) {
  BuilderGraph();
  size_t n = 0;
  for (auto _ : state) {
    insight::BuilderRecords r(BuilderGraph(), "amd64");
    n = r.removals().size();
  }
  state.counters["removals"] = static_cast<double>(n);
}
BENCHMARK(BM_BuilderRecords_Generated10k_AllRemovals)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cincinnati::bench
