// One poll of the update agent on the largest upstream golden answer (stable-4.7,
// amd64: 102 releases, 3,244 edges, 165 KB), from the cluster version with the most
// updates: the HTTP fetch from a server on 127.0.0.1, parsing, the recommended and
// conditional updates, and the risks (an evaluator that answers at once).
//   BM_AgentPoll_Golden47: fetch + parse + compute + risks, every iteration a fetch
//   BM_AgentParseCompute_Golden47: parse + compute only
// The peak_rss_mb counter is the process's peak resident set after the runs.
//   BM_AgentReadsHostileAnswer/N: hostile answers (below)
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/update_retriever.h"
#include "http_server/http_server.h"

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
  auto graph = graph_client::ParseUpdateGraph(GoldenAnswer());
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
    auto graph = graph_client::ParseUpdateGraph(GoldenAnswer());
    auto updates = graph_client::ComputeAvailableUpdates(*graph, {current, false, false}, "stable-4.7");
    offered = updates.updates.recommended.size() + updates.updates.conditional.size();
    benchmark::DoNotOptimize(updates);
  }
  state.counters["offered"] = static_cast<double>(offered);
  state.counters["peak_rss_mb"] = PeakRssMb();
}
BENCHMARK(BM_AgentParseCompute_Golden47)->Unit(benchmark::kMicrosecond);

void BM_AgentPoll_Golden47(benchmark::State& state) {
  http_server::ServerLimits limits;
  limits.threads = 1;
  http_server::HttpServer http(limits);
  auto port = http.Listen("127.0.0.1", 0, [](const http_server::Request&) {
    return http_server::Response::Text(200, GoldenAnswer(), "application/json");
  });
  http.Start();
  agent::HttpGraphFetcher fetcher;
  agent::RetrieverSettings settings;
  settings.poll_interval = std::chrono::milliseconds(0);  // every run fetches
  agent::UpdateRetriever retriever(
      fetcher, [](const std::vector<graph_client::MatchingRule>&) -> Result<bool> { return false; },
      env::RealClock(), settings);
  graph_client::GraphRequestInputs inputs{"http://127.0.0.1:" + std::to_string(*port) + "/graph",
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

// Hostile answers: what reading them costs in time, and in memory measured in
// a child process of its own (its peak resident set, ru_maxrss), so that one case's
// peak does not hide the next one's.
//   duplicate_edges: the edge 4.1.0 -> 4.1.1 a million times (6 MB): kept as one update
//   risks_200k:      one conditional edge with 200,000 risks (17 MB): refused (100,000)
//   message_40MiB:   one risk whose message is 40 MiB: refused (64 KiB a field)
//   dense_64MiB:     64 MiB of edges (11 M): refused (2,000,000), after the parse
std::string HostileAnswer(int which) {
  const std::string nodes = R"({"nodes":[{"version":"4.1.0","payload":"r@sha256:0"},{"version":"4.1.1","payload":"r@sha256:1"}],)";
  const std::string risk = R"({"url":"https://example.com/r","name":"R","message":"m","matchingRules":[{"type":"Always"}]})";
  std::string out = nodes;
  switch (which) {
    case 0:
      out += R"("edges":[)";
      for (int i = 0; i < 1000000; ++i) out += i ? ",[0,1]" : "[0,1]";
      return out + "]}";
    case 1:
      out += R"("edges":[],"conditionalEdges":[{"edges":[{"from":"4.1.0","to":"4.1.1"}],"risks":[)";
      for (int i = 0; i < 200000; ++i) out += (i ? "," : "") + risk;
      return out + "]}]}";
    case 2:
      return out + R"("edges":[],"conditionalEdges":[{"edges":[{"from":"4.1.0","to":"4.1.1"}],"risks":[{"url":"u","name":"R","message":")" +
             std::string(size_t{40} << 20, 'x') + R"(","matchingRules":[{"type":"Always"}]}]}]})";
    default:
      out += R"("edges":[)";
      while (out.size() < (size_t{64} << 20) - 16) out += "[0,1],";
      out.pop_back();
      return out + "]}";
  }
}

const char* kHostileNames[] = {"duplicate_edges", "risks_200k", "message_40MiB", "dense_64MiB"};

// Reads the answer as the agent does; what it keeps, or the failure's message.
std::string ReadAsTheAgent(const std::string& answer) {
  auto graph = graph_client::ParseUpdateGraph(answer);
  if (!graph.ok()) return "refused: " + graph.status().message().substr(0, 80);
  auto updates = graph_client::ComputeAvailableUpdates(*graph, {*Version::Parse("4.1.0"), false, false}, "stable-4.1");
  if (!updates.ok()) return "refused: " + updates.failure.message.substr(0, 80);
  return std::to_string(updates.updates.recommended.size() + updates.updates.conditional.size()) + " update(s) kept";
}

// /proc/self/status's VmRSS or VmHWM (the peak since the last reset), in MiB.
double StatusMb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stod(line.substr(std::strlen(field))) / 1024.0;
  }
  return -1;
}

// What reading the answer adds to a process's peak resident set, in MiB: measured in a
// child that builds the answer, resets its peak (clear_refs 5) and then reads it.
double ChildReadPeakMb(int which) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const std::string answer = HostileAnswer(which);
    std::ofstream("/proc/self/clear_refs") << "5";
    const double before = StatusMb("VmRSS:");
    benchmark::DoNotOptimize(ReadAsTheAgent(answer));
    const double added = StatusMb("VmHWM:") - before;
    (void)!::write(fds[1], &added, sizeof(added));
    ::_exit(0);
  }
  ::close(fds[1]);
  double added = -1;
  (void)!::read(fds[0], &added, sizeof(added));
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  return added;
}

void BM_AgentReadsHostileAnswer(benchmark::State& state) {
  const int which = static_cast<int>(state.range(0));
  const std::string answer = HostileAnswer(which);
  std::string outcome;
  for (auto _ : state) outcome = ReadAsTheAgent(answer);
  state.SetLabel(std::string(kHostileNames[which]) + ": " + outcome);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * answer.size()));
  state.counters["answer_mb"] = static_cast<double>(answer.size()) / (1 << 20);
  state.counters["read_peak_mb"] = ChildReadPeakMb(which);  // what reading adds to the answer itself
}
BENCHMARK(BM_AgentReadsHostileAnswer)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace cincinnati::bench
