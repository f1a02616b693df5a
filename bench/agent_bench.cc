// One poll of the update agent on the largest upstream golden answer (stable-4.7,
// amd64: 102 releases, 3,244 edges, 165 KB), from the cluster version with the most
// updates: the HTTP fetch from a server on 127.0.0.1, parsing, the recommended and
// conditional updates, and the risks (an evaluator that answers at once).
//   BM_AgentPoll_Golden47: fetch + parse + compute + risks, every iteration a fetch
//   BM_AgentParseCompute_Golden47: parse + compute only
// The peak_rss_mb counter is the process's peak resident set after the runs.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/update_retriever.h"
#include "server/http_server.h"

namespace cincinnati::bench {
namespace {

namespace fs = std::filesystem;

const std::string& GoldenAnswer() {
  static const std::string text = [] {
    std::ifstream in(fs::path(CINCINNATI_FIXTURES) /
                     "policy-engine-golden/134475077ed4eeaedf3c339f12915b9cdaf7d194_stable-4.7_amd64_v1.json");
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }();
  return text;
}

// The version with the most outgoing edges in the answer.
std::string BusiestVersion() {
  auto graph = agent::ParseUpdateGraph(GoldenAnswer());
  std::vector<size_t> out(graph->nodes.size());
  for (const auto& [from, to] : graph->edges) ++out[from];
  size_t best = std::max_element(out.begin(), out.end()) - out.begin();
  return graph->nodes[best].version.ToString();
}

double PeakRssMb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

void BM_AgentParseCompute_Golden47(benchmark::State& state) {
  const std::string version = BusiestVersion();
  const Version current = *Version::Parse(version);
  size_t offered = 0;
  for (auto _ : state) {
    auto graph = agent::ParseUpdateGraph(GoldenAnswer());
    auto updates = agent::ComputeAvailableUpdates(*graph, {current, false, false}, "stable-4.7");
    offered = updates.updates.recommended.size() + updates.updates.conditional.size();
    benchmark::DoNotOptimize(updates);
  }
  state.counters["offered"] = static_cast<double>(offered);
  state.counters["peak_rss_mb"] = PeakRssMb();
}
BENCHMARK(BM_AgentParseCompute_Golden47)->Unit(benchmark::kMicrosecond);

void BM_AgentPoll_Golden47(benchmark::State& state) {
  server::ServerLimits limits;
  limits.threads = 1;
  server::HttpServer http(limits);
  auto port = http.Listen("127.0.0.1", 0, [](const server::Request&) {
    return server::Response::Text(200, GoldenAnswer(), "application/json");
  });
  http.Start();
  agent::HttpGraphFetcher fetcher;
  agent::RetrieverSettings settings;
  settings.poll_interval = std::chrono::milliseconds(0);  // every run fetches
  agent::UpdateRetriever retriever(
      fetcher, [](const std::vector<agent::MatchingRule>&) -> Result<bool> { return false; },
      [] { return std::chrono::system_clock::now(); }, settings);
  agent::GraphRequestInputs inputs{"http://127.0.0.1:" + std::to_string(*port) + "/graph",
                                   "d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a", "amd64", BusiestVersion(), "stable-4.7"};
  size_t available = 0;
  for (auto _ : state) {
    auto got = retriever.Run(inputs);
    if (!got.fetched || got.retrieved.status != "True") state.SkipWithError(got.retrieved.message.c_str());
    available = got.available.size();
  }
  state.counters["available"] = static_cast<double>(available);
  state.counters["peak_rss_mb"] = PeakRssMb();
  http.Shutdown(std::chrono::seconds(1));
}
BENCHMARK(BM_AgentPoll_Golden47)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace
}  // namespace cincinnati::bench
