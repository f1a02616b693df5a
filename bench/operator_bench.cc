// The upgrade operator's cost per cluster and pass, for a cluster in the middle of its
// upgrade (the control plane is updating: the commanded steps are skipped, the pass waits
// at ControlPlaneUpgraded), the common state of a fleet during a rollout:
//   BM_OperatorPass_MidUpgrade: GET the agent's ClusterVersion (69 available updates,
//     a 2-entry history) and 30 ClusterOperators over HTTP from a server on 127.0.0.1,
//     read them, run the steps, and write the config to the SQLite state (fsync).
//   BM_OperatorReadSnapshot: reading the two documents only.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "operator/agent_client.h"
#include "operator/reconciler.h"
#include "operator/state_store.h"
#include "http_server/http_server.h"

namespace cincinnati::bench {
namespace {

namespace fs = std::filesystem;

std::string ClusterVersionJson() {
  std::string updates;
  for (int i = 2; i < 71; ++i) updates += fmt::format("{}{{\"version\":\"4.1.{}\",\"image\":\"quay.io/ocp/release@sha256:{:064}\"}}", i > 2 ? "," : "", i, i);
  return fmt::format(R"({{"apiVersion":"config.openshift.io/v1","kind":"ClusterVersion","metadata":{{"name":"version"}},
"spec":{{"clusterID":"d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a","channel":"stable-4.1","upstream":"http://127.0.0.1:8081/graph","desiredUpdate":{{"version":"4.1.1"}}}},
"status":{{"desired":{{"version":"4.1.1","image":"quay.io/ocp/release@sha256:{:064}"}},
"history":[{{"state":"Partial","version":"4.1.1","image":"i1","startedTime":"2026-11-25T00:00:00Z","verified":true}},{{"state":"Completed","version":"4.1.0","image":"i0","startedTime":"2026-11-01T00:00:00Z","completionTime":"2026-11-01T00:00:00Z","verified":false}}],
"availableUpdates":[{}],"conditionalUpdates":[],
"conditions":[{{"type":"Available","status":"True"}},{{"type":"Progressing","status":"True","message":"Working towards 4.1.1: 7 of 30 done"}},{{"type":"Failing","status":"False"}},{{"type":"Upgradeable","status":"True"}}]}}}})",
                     1, updates);
}

std::string OperatorsJson() {
  std::string items;
  for (int i = 0; i < 30; ++i) {
    items += fmt::format(R"({}{{"apiVersion":"config.openshift.io/v1","kind":"ClusterOperator","metadata":{{"name":"component-{}"}},
"status":{{"versions":[{{"name":"operator","version":"4.1.0"}}],"conditions":[{{"type":"Available","status":"True"}},{{"type":"Degraded","status":"False"}},{{"type":"Progressing","status":"False"}}]{}}}}})",
                         i ? "," : "", i, i == 29 ? R"(,"extension":{"machineCount":12,"updatedMachineCount":3})" : "");
  }
  return R"({"apiVersion":"config.openshift.io/v1","kind":"ClusterOperatorList","items":[)" + items + "]}";
}

void BM_OperatorReadSnapshot(benchmark::State& state) {
  const std::string cv = ClusterVersionJson(), operators = OperatorsJson();
  for (auto _ : state) {
    auto snapshot = upgrade::ReadAgentSnapshot(cv, operators);
    if (!snapshot.ok()) state.SkipWithError(snapshot.status().message().c_str());
    benchmark::DoNotOptimize(snapshot);
  }
}
BENCHMARK(BM_OperatorReadSnapshot)->Unit(benchmark::kMicrosecond);

void BM_OperatorPass_MidUpgrade(benchmark::State& state) {
  spdlog::set_level(spdlog::level::warn);
  const std::string cv = ClusterVersionJson(), operators = OperatorsJson();
  http_server::ServerLimits limits;
  limits.threads = 1;
  http_server::HttpServer http(limits);
  auto port = http.Listen("127.0.0.1", 0, [&](const http_server::Request& r) {
    return http_server::Response::Text(200, r.path.find("clusteroperators") != std::string::npos ? operators : cv, "application/json");
  });
  http.Start();
  const fs::path dir = fs::temp_directory_path() / fmt::format("operator-bench-{}", ::getpid());
  fs::create_directories(dir);
  auto store = upgrade::StateStore::Open((dir / "state.db").string());
  upgrade::GaugeTable metrics;
  upgrade::NotificationCenter notifications(**store, metrics, {});
  upgrade::OperatorConfig settings;
  upgrade::HttpUpdateAgent agent({"http://127.0.0.1:" + std::to_string(*port), "", "", std::chrono::seconds(10)});
  upgrade::ClusterPorts ports{&agent};
  upgrade::UpgradeConfig config;
  config.cluster = "prod-1";
  config.spec.upgrade_at = "2026-11-25T00:00:00Z";
  config.spec.desired = {"4.1.1", "stable-4.1", ""};
  config.SetHistory({"4.1.1", "4.1.0", upgrade::Phase::kUpgrading, {}, "2026-11-25T00:00:00Z", "", "", ""});
  std::string waiting;
  for (auto _ : state) {
    upgrade::PassContext pass{.settings = settings,
                              .notifications = notifications,
                              .metrics = metrics,
                              .now = std::chrono::system_clock::now(),
                              .wall_now = std::chrono::system_clock::now(),
                              .hold = {}};
    upgrade::PassResult result = upgrade::ReconcileOnce(config, ports, pass);
    if (!result.error.ok()) state.SkipWithError(result.error.message().c_str());
    waiting = result.note;
    if (Status s = (*store)->PutConfig(config); !s.ok()) state.SkipWithError(s.message().c_str());
  }
  if (waiting != "ControlPlaneUpgraded") state.SkipWithError(("the pass stopped at " + waiting).c_str());
  http.Shutdown(std::chrono::seconds(1));
  fs::remove_all(dir);
}
BENCHMARK(BM_OperatorPass_MidUpgrade)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace
}  // namespace cincinnati::bench
