// The upgrade operator rolling out a fleet: N clusters (fake_agent_fleet: every agent
// answers after 50 ms, a remote cluster's round trip, over real HTTP on 127.0.0.1), each
// with an UpgradeConfig to 4.1.1 due now, no fleet cap. The operator (this process, its
// real Run loop and thread pools, state in SQLite) runs until every agent was commanded
// (the benchmark's time), then until every config is Upgraded.
//   BM_OperatorFleetRollout/N/W/S: N clusters, W workers, state S: 0 SQLite, 1 PostgreSQL at
//   $CINCINNATI_BENCH_POSTGRES (a libpq URL; its tables are dropped first; skipped when
//   unset). Counters:
//     commanded_s   time until the last cluster was commanded (the iteration time)
//     upgraded_s    time until every config reported Upgraded
//     passes        reconcile passes in all
//     cpu_per_pass_us  this process's CPU (the operator, its HTTP clients, SQLite) per pass
// The fake agents run in their own process, so their CPU is not counted.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "http/client.h"
#include "postgres/postgres_session.h"
#include "operator/upgrade_operator.h"

namespace cincinnati::bench {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// The sum of a metric's samples in Prometheus text (lines "name{...} value" or "name value").
double SumMetric(const std::string& text, const std::string& name) {
  double sum = 0;
  size_t at = 0;
  while ((at = text.find(name, at)) != std::string::npos) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? text.size() : end;
    if (line.size() <= name.size() || (line[name.size()] != '{' && line[name.size()] != ' ')) continue;
    sum += std::atof(line.substr(line.rfind(' ') + 1).c_str());
  }
  return sum;
}

class FakeFleet {
 public:
  FakeFleet(int clusters, const fs::path& dir) {
    const fs::path binary = fs::read_symlink("/proc/self/exe").parent_path() / "fake_agent_fleet";
    const std::string port_file = (dir / "agents.port").string();
    const std::string count = std::to_string(clusters);
    pid_ = fork();
    if (pid_ == 0) {
      execl(binary.c_str(), binary.c_str(), "--clusters", count.c_str(), "--delay-ms", "50", "--port-file", port_file.c_str(), nullptr);
      _exit(127);
    }
    for (int i = 0; i < 1000 && !fs::exists(port_file); ++i) std::this_thread::sleep_for(10ms);
    std::ifstream(port_file) >> port_;
  }
  ~FakeFleet() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool ok() const { return port_ != 0; }
  std::string url(int cluster) const { return fmt::format("http://127.0.0.1:{}/c{}", port_, cluster); }
  int Commanded() const {
    http::GetOptions options;
    options.timeout = 5s;
    http::Result got = http::Get(fmt::format("http://127.0.0.1:{}/stats", port_), options);
    int commanded = -1;
    if (got.status == 200) std::sscanf(got.body.c_str(), "commanded %d", &commanded);
    return commanded;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

void BM_OperatorFleetRollout(benchmark::State& state) {
  spdlog::set_level(spdlog::level::warn);
  const int clusters = static_cast<int>(state.range(0));
  const fs::path dir = fs::temp_directory_path() / fmt::format("operator-fleet-bench-{}", ::getpid());
  for (auto _ : state) {
    fs::remove_all(dir);
    fs::create_directories(dir / "configs");
    FakeFleet agents(clusters, dir);
    if (!agents.ok()) {
      state.SkipWithError("fake_agent_fleet did not start (is it built next to this benchmark?)");
      break;
    }
    std::string fleet = "clusters:\n";
    const std::string upgrade_at = upgrade::FormatTime(std::chrono::system_clock::now() - 1min);
    for (int i = 1; i <= clusters; ++i) {
      fleet += fmt::format("- name: c{}\n  agent: \"{}\"\n", i, agents.url(i));
      std::ofstream(dir / "configs" / fmt::format("c{}.yaml", i))
          << "apiVersion: upgrade.managed.openshift.io/v1alpha1\nkind: UpgradeConfig\nmetadata:\n  name: managed-upgrade-config\n"
          << "  labels: {cluster: c" << i << "}\nspec:\n  type: OSD\n  upgradeAt: \"" << upgrade_at
          << "\"\n  PDBForceDrainTimeout: 60\n  desired:\n    version: \"4.1.1\"\n    channel: stable-4.1\n";
    }
    std::ofstream(dir / "fleet.yaml") << fleet;
    upgrade::OperatorOptions options;
    options.fleet_path = (dir / "fleet.yaml").string();
    options.state_dir = (dir / "state").string();
    if (state.range(2) == 1) {
      const char* url = std::getenv("CINCINNATI_BENCH_POSTGRES");
      if (!url) {
        state.SkipWithError("set CINCINNATI_BENCH_POSTGRES to a libpq URL to measure the state in PostgreSQL");
        break;
      }
      postgres::PostgresSession admin(url, "", "bench");
      if (auto dropped = admin.Exec("DROP TABLE IF EXISTS configs, notifications, flags, leader"); !dropped.ok()) {
        state.SkipWithError(dropped.status().message().c_str());
        break;
      }
      options.state_dir.clear();
      options.postgres_url = url;
    }
    options.configs_dir = (dir / "configs").string();
    options.interval = 60s;
    options.workers = static_cast<int>(state.range(1));
    auto op = upgrade::UpgradeOperator::Open(options);
    if (!op.ok()) {
      state.SkipWithError(op.status().message().c_str());
      break;
    }
    const double cpu_before = CpuSeconds();
    const auto started = std::chrono::steady_clock::now();
    std::jthread run([&](std::stop_token stop) { (*op)->Run(stop); });
    double commanded_s = 0, upgraded_s = 0;
    while (std::chrono::steady_clock::now() - started < 20min) {
      if (commanded_s == 0 && agents.Commanded() == clusters) {
        commanded_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      }
      if (commanded_s > 0 && (*op)->ClustersPerPhase()["Upgraded"] == clusters) {
        upgraded_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        break;
      }
      std::this_thread::sleep_for(250ms);
    }
    run.request_stop();
    run.join();
    const double cpu = CpuSeconds() - cpu_before;
    const double passes = SumMetric((*op)->Metrics(), "upgradeoperator_reconciles_total");
    op->reset();
    if (upgraded_s == 0) {
      state.SkipWithError("the fleet did not finish within 20 minutes");
      break;
    }
    state.SetIterationTime(commanded_s);
    state.counters["commanded_s"] = commanded_s;
    state.counters["upgraded_s"] = upgraded_s;
    state.counters["passes"] = passes;
    state.counters["cpu_s"] = cpu;
    state.counters["cpu_per_pass_us"] = passes > 0 ? cpu / passes * 1e6 : 0;
  }
  fs::remove_all(dir);
}
BENCHMARK(BM_OperatorFleetRollout)
    ->Args({100, 32, 0})
    ->Args({1000, 32, 0})
    ->Args({10000, 32, 0})
    ->Args({1000, 32, 1})
    ->Args({10000, 32, 1})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace cincinnati::bench
