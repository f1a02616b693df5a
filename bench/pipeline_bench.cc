// Benchmarks of the graph builder pipeline and the policy filters.
//   Fixture: the upstream 20200319 fixture (132 nodes, 616 raw edges).
//   Generated10k: 10,000 releases with realistic previous lists, 84 channels and
//   2,000 blocked edges (see generated_graph_data.h).
// Run: build/bench/pipeline_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <filesystem>

#include "builder/edge_add_remove.h"
#include "builder/pipeline.h"
#include "builder/release_sources.h"
#include "core/graph_check.h"
#include "core/graph_json.h"
#include "generated_graph_data.h"
#include "graph-data/secondary_metadata.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"

namespace cincinnati::bench {
namespace {

namespace fs = std::filesystem;

const fs::path kFixture = fs::path(CINCINNATI_FIXTURES) / "secondary-metadata/20200319.204124";

LocalBuildOptions Options(const fs::path& releases, const fs::path& graph_data) {
  LocalBuildOptions options;
  options.releases = releases;
  options.graph_data = graph_data;
  return options;
}

void RunPipeline(benchmark::State& state, const LocalBuildOptions& options) {
  size_t bytes = 0, edges = 0;
  for (auto _ : state) {
    TransformContext context;
    auto graph = BuildLocalGraph(options, context);
    if (!graph.ok()) {
      state.SkipWithError(graph.status().message().c_str());
      return;
    }
    std::string json = WriteGraphJson(*graph);
    bytes = json.size();
    edges = graph->edge_count();
    benchmark::DoNotOptimize(json);
  }
  state.counters["edges"] = static_cast<double>(edges);
  state.counters["json_bytes"] = static_cast<double>(bytes);
}

// Whole pipeline: read sources, graph-data, edge-add-remove, serialize.
void BM_Pipeline_Fixture20200319(benchmark::State& state) {
  RunPipeline(state, Options(kFixture / "graph-gb-raw.json", kFixture / "cincinnati-graph-data"));
}
BENCHMARK(BM_Pipeline_Fixture20200319)->Unit(benchmark::kMillisecond);

void BM_Pipeline_Generated10k(benchmark::State& state) {
  RunPipeline(state, Options(Generated().releases, Generated().graph_data));
}
BENCHMARK(BM_Pipeline_Generated10k)->Unit(benchmark::kMillisecond);

// The stages of the generated pipeline on their own.
void BM_Stage_Generated10k_LoadReleases(benchmark::State& state) {
  for (auto _ : state) {
    TransformContext ctx;
    auto graph = LoadReleases(Generated().releases, {}, ctx);
    benchmark::DoNotOptimize(graph);
  }
}
BENCHMARK(BM_Stage_Generated10k_LoadReleases)->Unit(benchmark::kMillisecond);

void BM_Stage_Generated10k_LoadGraphData(benchmark::State& state) {
  for (auto _ : state) {
    Diagnostics d;
    auto data = graphdata::LoadGraphData(Generated().graph_data, {}, d);
    benchmark::DoNotOptimize(data);
  }
}
BENCHMARK(BM_Stage_Generated10k_LoadGraphData)->Unit(benchmark::kMillisecond);

void BM_Stage_Generated10k_ApplyAndEdgeAddRemove(benchmark::State& state) {
  TransformContext ctx;
  Graph raw = LoadReleases(Generated().releases, {}, ctx).value();
  Diagnostics d;
  graphdata::GraphData data = graphdata::LoadGraphData(Generated().graph_data, {}, d).value();
  for (auto _ : state) {
    Graph g = raw;
    graphdata::ApplyGraphData(data, kDefaultKeyPrefix, g);
    TransformContext context;
    auto out = EdgeAddRemove().Apply(std::move(g), context);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_Stage_Generated10k_ApplyAndEdgeAddRemove)->Unit(benchmark::kMillisecond);

void BM_GraphJson_Generated10k_Read(benchmark::State& state) {
  std::string json = WriteGraphJson(GeneratedGraph());
  for (auto _ : state) {
    auto g = ReadGraphJson(json);
    benchmark::DoNotOptimize(g);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * json.size()));
}
BENCHMARK(BM_GraphJson_Generated10k_Read)->Unit(benchmark::kMillisecond);

void BM_GraphJson_Generated10k_Write(benchmark::State& state) {
  Graph g = GeneratedGraph();
  size_t size = 0;
  for (auto _ : state) {
    std::string json = WriteGraphJson(g);
    size = json.size();
    benchmark::DoNotOptimize(json);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}
BENCHMARK(BM_GraphJson_Generated10k_Write)->Unit(benchmark::kMillisecond);

// The pre-publish check on the 10k graph (every version parsed, every string's UTF-8,
// every edge and conditional edge): paid once per refresh.
void BM_CheckServable_Generated10k(benchmark::State& state) {
  Graph g = GeneratedGraph();
  for (auto _ : state) {
    Status s = CheckServable(g);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_CheckServable_Generated10k)->Unit(benchmark::kMillisecond);

// One policy-engine view (channel + arch filter + versioned JSON) of the 10k graph.
void BM_PolicyView_Generated10k(benchmark::State& state) {
  Graph g = GeneratedGraph();
  TransformChain chain;
  chain.push_back(std::make_unique<policy::ChannelFilter>());
  chain.push_back(std::make_unique<policy::ArchFilter>());
  size_t nodes = 0;
  for (auto _ : state) {
    TransformContext context;
    context.parameters = {{"channel", "stable-4.20"}, {"arch", "amd64"}};
    auto view = RunChainOn(chain, g, context);
    nodes = view->node_count();
    std::string json = WriteGraphJson(*view, {.schema_version = 1});
    benchmark::DoNotOptimize(json);
  }
  state.counters["nodes"] = static_cast<double>(nodes);
}
BENCHMARK(BM_PolicyView_Generated10k)->Unit(benchmark::kMicrosecond);

void BM_GraphCopy_Generated10k(benchmark::State& state) {
  Graph g = GeneratedGraph();
  for (auto _ : state) {
    Graph copy = g;
    benchmark::DoNotOptimize(copy);
  }
}
BENCHMARK(BM_GraphCopy_Generated10k)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cincinnati::bench

// `pipeline_bench --write-generated DIR` writes the generated input and exits (the
// HTTP benchmark serves it); otherwise Google Benchmark runs.
int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--write-generated") {
    cincinnati::bench::WriteGeneratedInput(argv[2]);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
