// Automatic brakes from fleet reports, end to end on real processes: releases 4.1.0 and 4.1.1 in a
// real docker-registry, signed with a fresh GnuPG key; a graph builder scraping it; two
// policy engines reading the graph builder (one for real agents, one for a simulated
// fleet) and a third chained behind the first, as a disconnected site's would be.
// Three real agents update 4.1.0 -> 4.1.1 (one completes; the ingress component of two
// stays Degraded) and report; then `cincinnati fleet simulate` runs 40 clusters through
// the other policy engine, one in five failing on the same edge. The brake must reach
// every policy engine's answers within two minutes of the graph builder deciding it;
// `explain` names its blocked-edges file on each; a fresh agent sees the edge as a
// risk; a person clears it and every policy engine offers the edge again.
//
// Clocks: the services and the simulator share one clock running 240 times faster
// than real time (--testing.*, --time-scale), so that the simulated fleet's half hour
// of polling and updating takes seconds; the agents keep the real clock (their reports
// are dated in the services' past, which the services accept). The two minutes are
// measured on the real clock.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>

#include "cluster_version_util.h"
#include "core/date_time.h"
#include "gpg_util.h"
#include "kube/json_value.h"
#include "registry_util.h"
#include "service_util.h"
#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using kube::JsonValue;
using kube::WriteJson;
using testing::At;
using testing::ListsVersion;
using testing::ChildProcess;
using testing::Get;
using testing::Json;
using testing::ServiceProcess;
using testing::WaitFor;

constexpr char kRisk[] = "AutomaticallyBlocked_4_1_0_to_4_1_1";
constexpr char kCv[] = "/apis/config.openshift.io/v1/clusterversions/version";
constexpr int kTimeScale = 240;

// The graph a cluster at 4.1.0 on stable-4.1 gets from `base`.
std::string Graph(const std::string& base) {
  return Get(base + "/graph?channel=stable-4.1&arch=amd64&version=4.1.0", {"Accept: application/json"}).body;
}


class BrakeAcceptanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(key_.ok());
    ASSERT_TRUE(registry_.ready()) << registry_.log();
    const std::string include = "  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n";
    for (const char* name : {"ingress", "dns"}) {
      testing::WriteFile(manifests_ / (std::string("0000_50_") + name + "_01-clusteroperator.yaml"),
                         std::string("apiVersion: config.openshift.io/v1\nkind: ClusterOperator\nmetadata:\n  name: ") + name + "\n" +
                             include);
    }
    for (const char* v : {"4.1.0", "4.1.1"}) {
      auto pushed = testing::RunCincinnati(std::string("release new --version ") + v + (std::string(v) == "4.1.1" ? " --previous 4.1.0" : "") +
                                           " --metadata io.openshift.upgrades.graph.release.channels=stable-4.1 --payload-manifests " +
                                           manifests_.path().string() + " --to " + registry_.url() + "/ocp/release:" + v);
      ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
      const std::string image = pushed.out.substr(0, pushed.out.find('\n'));
      auto signed_ = testing::RunCincinnati("release sign " + image + " --store " + store_.path().string() + " --gnupg-home " + key_.home());
      ASSERT_EQ(signed_.exit_code, 0) << signed_.err;
      if (installed_.empty()) installed_ = "http://" + image;
    }
    testing::WriteFile(graph_data_ / "version", "1.1.0\n");
    testing::WriteFile(graph_data_ / "raw/metadata.json", "{}\n");
    testing::WriteFile(graph_data_ / "channels/stable-4.1.yaml", "name: stable-4.1\nversions:\n- 4.1.0\n- 4.1.1\n");
    fs::create_directories(graph_data_ / "blocked-edges");
    testing::WriteFile(dir_ / "admin.token", "let-me-clear\n");
    testing::WriteFile(dir_ / "reports.token", "policy-engines\n");
    epoch_ = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  }

  // The shared clock: it reads `epoch_` at real time `epoch_`, and runs kTimeScale times faster.
  std::vector<std::string> Clock() const {
    return {"--testing.now", FormatUnixSeconds(epoch_), "--testing.time_scale", std::to_string(kTimeScale), "--testing.epoch",
            std::to_string(epoch_)};
  }
  std::unique_ptr<ServiceProcess> Start(const std::string& kind, std::vector<std::string> args) {
    const std::vector<std::string> clock = Clock();
    args.insert(args.end(), clock.begin(), clock.end());
    auto service = std::make_unique<ServiceProcess>(kind, args);
    EXPECT_TRUE(service->running()) << service->log();
    return service;
  }
  // A policy engine that takes reports (from clusters polling for half as long as the
  // default asks, on this clock 2.5 real seconds) and relays them to the graph builder.
  std::unique_ptr<ServiceProcess> ReportingEngine(const std::string& upstream) {
    return Start("policy-engine", {"--upstream.cincinnati.url", upstream, "--upstream.cincinnati.cache_ttl_secs", "30",
                                   "--reports.enabled", "true", "--reports.upstream_token_file",
                                   (dir_ / "reports.token").string(), "--reports.min_poller_age_secs", "600", "--reports.min_polls", "3"});
  }
  // A real agent at 4.1.0 polling `engine`, with its two components.
  std::unique_ptr<ServiceProcess> Agent(const std::string& name, ServiceProcess& engine, bool ingress_fails) {
    auto agent = std::make_unique<ServiceProcess>(
        "agent", std::vector<std::string>{"--state-dir", (dir_ / name).string(), "--release-image", installed_, "--registry.insecure",
                                          registry_.host_port(), "--verification.keys", key_.keys(), "--verification.stores",
                                          "file://" + store_.path().string(), "--upstream", engine.url("/graph"), "--channel",
                                          "stable-4.1", "--arch", "amd64", "--poll-interval", "2", "--port", "0", "--reports.url",
                                          engine.url("/v1/reports"), "--reports.degraded_grace", "2"});
    EXPECT_TRUE(agent->running()) << agent->log();
    for (const char* component : {"ingress", "dns"}) {
      std::vector<std::string> argv = {CINCINNATI_BINARY, "component", "--agent", agent->url(""), "--name", component, "--version", "4.1.0"};
      if (ingress_fails && std::string(component) == "ingress") argv.push_back("--fail");
      components_.push_back(std::make_unique<ChildProcess>(argv));
    }
    return agent;
  }
  JsonValue Cv(ServiceProcess& agent) { return Json(Get(agent.url(kCv)).body); }

  testing::Signer key_{"release"};
  testing::LocalRegistry registry_;
  testing::TempDir manifests_, store_, graph_data_, dir_;
  std::string installed_;
  int64_t epoch_ = 0;
  std::vector<std::unique_ptr<ChildProcess>> components_;
};

TEST_F(BrakeAcceptanceTest, RealAgentsAndASimulatedFleetBrakeABadEdgeInEveryPolicyEngine) {
  auto builder = Start("graph-builder", {"--upstream.registry.url", registry_.url(), "--upstream.registry.repository", "ocp/release",
                                         "--graph-data", graph_data_.path().string(), "--service.pause_secs", "3600",
                                         "--reports.state_dir", (dir_ / "reports").string(), "--brakes.url_base", "https://updates.example.com/api/upgrades_info/v1/brakes", "--reports.token_file",
                                         (dir_ / "reports.token").string(), "--brakes.admin_token_file", (dir_ / "admin.token").string()});
  ASSERT_TRUE(WaitFor([&] { return Get(builder->url("/readiness", "status")).status == 200; }, 60s)) << builder->log();
  auto for_agents = ReportingEngine(builder->url("/graph"));
  auto for_fleet = ReportingEngine(builder->url("/graph"));
  // Each policy engine asks its upstream again every cache TTL (60 real seconds by
  // default; 30 here, to keep the test short), so a brake reaches one within a TTL and a
  // chained one within the sum along the chain: 60 s here.
  auto disconnected = Start("policy-engine", {"--upstream.cincinnati.url", for_agents->url("/graph"), "--upstream.cincinnati.cache_ttl_secs", "30"});
  std::vector<std::pair<const char*, ServiceProcess*>> engines = {
      {"agents' policy engine", for_agents.get()}, {"fleet's policy engine", for_fleet.get()}, {"chained policy engine", disconnected.get()}};
  for (const auto& [name_, engine_] : engines) {
    const char* name = name_;
    ServiceProcess* engine = engine_;  // named copies: clang 14 cannot capture a structured binding
    ASSERT_TRUE(WaitFor([&] { return Graph(engine->url("")).find("4.1.1") != std::string::npos; }, 60s)) << name << engine->log();
  }

  // Three real agents update; the ingress of two stays Degraded. Their three reports
  // reach the graph builder: too few clusters for a brake.
  std::vector<std::unique_ptr<ServiceProcess>> agents;
  for (int n = 0; n < 3; ++n) agents.push_back(Agent("agent" + std::to_string(n), *for_agents, /*ingress_fails=*/n > 0));
  for (auto& agent : agents) {
    JsonValue cv;
    ASSERT_TRUE(WaitFor([&] { return ListsVersion(cv = Cv(*agent), "availableUpdates", "4.1.1"); }, 60s)) << WriteJson(cv, 2) << agent->log();
    // A report counts only from a cluster seen polling at the version it updates from
    // (three polls, the first ten simulated minutes before): four polls, 2 real seconds
    // apart, span 6 real seconds, 24 simulated minutes.
    ASSERT_TRUE(WaitFor([&] {
      return testing::MetricValue(Get(agent->url("/metrics")).body, "cincinnati_agent_update_service_requests_total") >= 4;
    }, 60s)) << agent->log();
    auto upgrade = testing::RunCincinnati("adm upgrade --to 4.1.1 --agent " + agent->url(""));
    ASSERT_EQ(upgrade.exit_code, 0) << upgrade.err;
  }
  // Their first reports come before the policy engine has seen them poll for long
  // enough; the agents send them again later.
  ASSERT_TRUE(WaitFor([&] {
    const std::string metrics = Get(builder->url("/metrics", "status")).body;
    return testing::MetricValue(metrics, R"(cincinnati_gb_reports_received_total{result="Completed"})") == 1 &&
           testing::MetricValue(metrics, R"(cincinnati_gb_reports_received_total{result="Failed"})") == 2;
  }, 120s))
      << Get(builder->url("/metrics", "status")).body << for_agents->log() << agents[0]->log() << agents[2]->log();
  auto counted = testing::RunCincinnati("brakes list --json --url " + builder->url(""));
  EXPECT_EQ(counted.exit_code, 0) << counted.err;
  EXPECT_EQ(Graph(builder->url("")).find(kRisk), std::string::npos) << "three clusters are too few for a brake";

  // The simulated fleet, through the other policy engine, on the services' clock.
  testing::TempDir fleet_out;
  ChildProcess fleet({CINCINNATI_BINARY, "fleet", "simulate", "--service", for_fleet->url(""), "--brakes-url", builder->url(""), "--polls", "all", "--start", FormatUnixSeconds(epoch_),
                      "--epoch", std::to_string(epoch_), "--time-scale", std::to_string(kTimeScale), "--days", "0.042", "--clusters", "40",
                      "--seed", "7", "--channel", "stable-4.1", "--start-versions", "4.1.0=100%", "--delay", "20m",
                      "--update-duration", "10m", "--failure", "4.1.0->4.1.1: 20%, component=network", "--out", fleet_out.path().string()});

  // The graph builder decides; then every policy engine serves the brake.
  ASSERT_TRUE(WaitFor([&] { return Graph(builder->url("")).find(kRisk) != std::string::npos; }, 120s)) << fleet.log() << builder->log();
  const auto decided = std::chrono::steady_clock::now();
  for (const auto& [name_, engine_] : engines) {
    const char* name = name_;
    ServiceProcess* engine = engine_;  // named copies: clang 14 cannot capture a structured binding
    ASSERT_TRUE(WaitFor([&] { return Graph(engine->url("")).find(kRisk) != std::string::npos; }, 120s)) << name << engine->log();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - decided).count();
    std::printf("the brake reached the %s %.1f s after the graph builder served it\n", name, seconds);
    EXPECT_LT(seconds, 120) << name;
  }
  const fs::path file = dir_ / "reports" / "blocked-edges" / (std::string("4.1.1-") + kRisk + ".yaml");
  EXPECT_TRUE(fs::exists(file));
  const std::string explain = "/v1/explain?channel=stable-4.1&arch=amd64&version=4.1.0&to=4.1.1";
  for (ServiceProcess* engine : {for_agents.get(), for_fleet.get()}) {
    auto why = Get(engine->url(explain));
    EXPECT_NE(why.body.find(std::string("blocked-edges/4.1.1-") + kRisk + ".yaml"), std::string::npos) << why.body;
  }
  // A policy engine that forwards to another explains nothing itself, and says whom to ask.
  EXPECT_NE(Get(disconnected->url(explain)).body.find(for_agents->url("/graph") + "): ask that one"), std::string::npos);
  const std::string braked = Graph(for_fleet->url(""));
  EXPECT_NE(braked.find(R"("matchingRules":[{"type":"Always"}])"), std::string::npos) << braked;
  EXPECT_NE(braked.find("clusters that updated from 4.1.0 to 4.1.1 failed"), std::string::npos) << braked;

  // The simulator ends on its own and says the edge was braked.
  ASSERT_TRUE(WaitFor([&] { return !fleet.running(); }, 120s)) << fleet.log();
  const std::string summary = testing::ReadFile(fleet_out / "summary.json");
  EXPECT_NE(summary.find(R"("brake":{"since":)"), std::string::npos) << summary << fleet.log();

  // A fresh agent behind the chained policy engine is offered 4.1.1 only as a risk.
  auto fresh = Agent("fresh", *disconnected, false);
  JsonValue cv;
  ASSERT_TRUE(WaitFor([&] { return ListsVersion(cv = Cv(*fresh), "conditionalUpdates", "4.1.1"); }, 60s)) << WriteJson(cv, 2) << fresh->log();
  EXPECT_FALSE(ListsVersion(cv, "availableUpdates", "4.1.1")) << WriteJson(cv, 2);
  EXPECT_NE(WriteJson(At(cv, {"status", "conditionalUpdates"})).find(kRisk), std::string::npos) << WriteJson(cv, 2);

  // A person clears the brake: every policy engine offers the edge again, the file is gone.
  auto cleared = testing::RunCincinnati("brakes clear --url " + builder->url("") + " --from 4.1.0 --to 4.1.1 --by alice --note checked --token-file " +
                                        (dir_ / "admin.token").string());
  ASSERT_EQ(cleared.exit_code, 0) << cleared.err;
  for (const auto& [name_, engine_] : engines) {
    const char* name = name_;
    ServiceProcess* engine = engine_;  // named copies: clang 14 cannot capture a structured binding
    EXPECT_TRUE(WaitFor([&] { return Graph(engine->url("")).find(kRisk) == std::string::npos; }, 120s)) << name;
  }
  EXPECT_FALSE(fs::exists(file));
  ASSERT_TRUE(WaitFor([&] { return ListsVersion(cv = Cv(*fresh), "availableUpdates", "4.1.1"); }, 60s)) << WriteJson(cv, 2);
}

}  // namespace
}  // namespace cincinnati
