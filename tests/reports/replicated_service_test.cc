// The update service as its users run it, end to end on real processes: two graph
// builders and three policy engines on one PostgreSQL 15 (started here), each tier behind
// the real nginx, round robin; `fleet simulate` drives 500 clusters through the engines'
// address, polling as agents do and reporting, one in five failing on 4.13.1 -> 4.13.2.
// One graph builder is killed with -9 while reports arrive and started again.
//
// What must hold: the edge is braked once (one "applied" event in the database); every
// policy engine serves the braked graph within a few seconds of the decision (the other
// builder follows the database within a second, and each engine asks its upstream every
// second here) and never the unbraked one after that; no genuine report is refused (each
// engine sees a third of a cluster's polls, and the poll receipts carry the rest); both
// builders serve the same bytes with the same generation; and the same fleet against one
// `serve` fails on the bad edge as often, within 20 %.
//
// Clocks: services and simulator share one clock, 120 times faster than real time.
#include <gtest/gtest.h>

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "core/date_time.h"
#include "nginx_balancer.h"
#include "postgres_server.h"
#include "service/http_names.h"
#include "service_util.h"
#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::ChildProcess;
using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;

constexpr char kRisk[] = "AutomaticallyBlocked_4_13_1_to_4_13_2";
constexpr int kTimeScale = 120;
constexpr char kStart[] = "2026-01-01T00:00:00Z";
const fs::path kExample = testing::Examples() / "ocp-4x";

// What the fleet's clusters at 4.13.1 are answered through `base` ({prefix}).
http::Result Answer(const std::string& base) {
  return Get(base + "/graph?channel=stable-4.13&arch=amd64&version=4.13.1", {"Accept: application/json"});
}
bool Braked(const std::string& base) { return Answer(base).body.find(kRisk) != std::string::npos; }

struct Summary {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  bool Read(const fs::path& out) {
    const std::string text = testing::ReadFile(out / "summary.json");
    return !text.empty() && !parser.parse(text).get(root);
  }
  int64_t Int(std::string_view pointer) {
    int64_t v = -1;
    return root.at_pointer(pointer).get_int64().get(v) ? -1 : v;
  }
  std::string Text(std::string_view pointer) {
    std::string_view v;
    return root.at_pointer(pointer).get_string().get(v) ? "?" : std::string(v);
  }
  std::string Refused() { return simdjson::to_string(root.at_pointer("/reports/refused")); }
};

// The fleet, the same in both runs: 500 clusters at 4.13.1 poll for 15 to 75 simulated
// minutes before they update (so that each has polled a few times, as the report checks
// ask), updates take 20 minutes, and the run lasts until every update has ended (95
// minutes), so that the failures counted are those the brake did not prevent: the two
// runs differ by how soon each service's brake reached the clusters (a second or two of
// real time here, 2 to 4 simulated minutes, 2 to 5 clusters).
std::vector<std::string> FleetArgs(const fs::path& out) {
  return {"--channel", "stable-4.13", "--start-versions", "4.13.1=100%", "--clusters", "500", "--seed", "11", "--start", kStart,
          "--time-scale", std::to_string(kTimeScale), "--days", "0.066", "--delay", "uniform:15m-75m", "--update-duration", "20m",
          "--failure", "4.13.1->4.13.2: 20%, component=network", "--polls", "all", "--out", out.string()};
}

class ReplicatedServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pg_.ready()) GTEST_SKIP() << pg_.error();
    testing::WriteFile(dir_ / "reports.token", "policy-engines\n");
    testing::WriteFile(dir_ / "admin.token", "let-me-clear\n");
    testing::WriteFile(dir_ / "receipt.key", "a key every policy engine shares, 32 bytes or more\n");
    testing::WriteFile(dir_ / "postgres.url", pg_.url() + "\n");
    epoch_ = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() + 3;
  }
  std::vector<std::string> Clock() const {
    return {"--testing.now", kStart, "--testing.time_scale", std::to_string(kTimeScale), "--testing.epoch", fmt::format("{:.3f}", epoch_)};
  }
  // Graph builder `n`; `ports` set: on the ports it had before (a restart behind nginx).
  std::unique_ptr<ServiceProcess> Builder(int n, const ServiceProcess* before = nullptr) {
    std::vector<std::string> args = {"--releases", (kExample / "releases").string(), "--graph-data", (kExample / "graph-data").string(),
                                     "--service.pause_secs", "3600", "--reports.postgres_file", (dir_ / "postgres.url").string(),
                                     "--reports.state_dir", (dir_ / ("builder" + std::to_string(n))).string(), "--brakes.url_base",
                                     "https://updates.example.com/api/upgrades_info/v1/brakes", "--reports.token_file",
                                     (dir_ / "reports.token").string(), "--brakes.admin_token_file", (dir_ / "admin.token").string()};
    if (before) {
      for (const auto& [flag, listener] : {std::pair{"--service.port", "main"}, {"--status.port", "status"}, {"--service.public_port", "public"}}) {
        args.insert(args.end(), {flag, std::to_string(before->port(listener))});
      }
    }
    const std::vector<std::string> clock = Clock();
    args.insert(args.end(), clock.begin(), clock.end());
    auto builder = std::make_unique<ServiceProcess>("graph-builder", args);
    EXPECT_TRUE(builder->running()) << builder->log();
    return builder;
  }
  std::unique_ptr<ServiceProcess> Engine(const std::string& upstream) {
    std::vector<std::string> args = {"--upstream.cincinnati.url", upstream, "--upstream.cincinnati.cache_ttl_secs", "1",
                                     "--reports.enabled", "true", "--reports.upstream_token_file", (dir_ / "reports.token").string(),
                                     "--reports.receipt_key_file", (dir_ / "receipt.key").string(), "--reports.postgres_file",
                                     (dir_ / "postgres.url").string(), "--reports.min_poller_age_secs", "600", "--reports.min_polls", "3"};
    const std::vector<std::string> clock = Clock();
    args.insert(args.end(), clock.begin(), clock.end());
    auto engine = std::make_unique<ServiceProcess>("policy-engine", args);
    EXPECT_TRUE(engine->running()) << engine->log();
    return engine;
  }

  testing::PostgresServer pg_;
  testing::TempDir dir_;
  double epoch_ = 0;
};

TEST_F(ReplicatedServiceTest, TwoBuildersAndThreeEnginesBehindNginxBrakeOnceAndRefuseNoGenuineReport) {
  std::unique_ptr<ServiceProcess> builders[2] = {Builder(1), Builder(2)};
  for (auto& b : builders) ASSERT_TRUE(WaitFor([&] { return Get(b->url("/readiness", "status")).status == 200; }, 60s)) << b->log();
  testing::NginxBalancer builder_lb({static_cast<uint16_t>(builders[0]->port("main")), static_cast<uint16_t>(builders[1]->port("main"))});
  ASSERT_TRUE(builder_lb.ready()) << builder_lb.error();
  std::vector<std::unique_ptr<ServiceProcess>> engines;
  for (int n = 0; n < 3; ++n) engines.push_back(Engine(builder_lb.url("/graph")));
  std::vector<uint16_t> engine_ports;
  for (auto& e : engines) {
    ASSERT_TRUE(WaitFor([&] { return Answer(e->url("")).status == 200; }, 60s)) << e->log();
    engine_ports.push_back(static_cast<uint16_t>(e->port("main")));
  }
  testing::NginxBalancer engine_lb(engine_ports);
  ASSERT_TRUE(engine_lb.ready()) << engine_lb.error();

  std::vector<std::string> argv = {CINCINNATI_BINARY, "fleet", "simulate", "--service", engine_lb.url(""), "--brakes-url",
                                   builder_lb.url(""), "--epoch", fmt::format("{:.3f}", epoch_)};
  const std::vector<std::string> fleet_args = FleetArgs(dir_ / "fleet");
  argv.insert(argv.end(), fleet_args.begin(), fleet_args.end());
  ChildProcess fleet(argv);
  // Every engine's answer, ten rounds a second until the fleet is done: a sampler's pace
  // (back to back, it would load the machine the services share), ended at once by the stop.
  std::mutex sampling_mu;
  std::condition_variable sampling_cv;
  bool sampling = true;
  int unbraked_after_braked = 0, rolled_back = 0, asked = 0;
  std::vector<uint64_t> generations(engines.size(), 0);
  std::vector<bool> braked(engines.size(), false);
  std::thread sampler([&] {
    for (;;) {
      for (size_t n = 0; n < engines.size(); ++n) {
        const http::Result answer = Answer(engines[n]->url(""));
        if (answer.status != 200) continue;
        ++asked;
        const bool now_braked = answer.body.find(kRisk) != std::string::npos;
        unbraked_after_braked += braked[n] && !now_braked ? 1 : 0;
        braked[n] = braked[n] || now_braked;
        const std::string* generation = answer.Header(server::kGenerationHeader);
        const uint64_t number = generation ? std::strtoull(generation->c_str(), nullptr, 10) : 0;
        rolled_back += number < generations[n] ? 1 : 0;
        generations[n] = std::max(generations[n], number);
      }
      std::unique_lock lock(sampling_mu);
      if (sampling_cv.wait_for(lock, 100ms, [&] { return !sampling; })) return;
    }
  });
  std::shared_ptr<void> stop_sampler(nullptr, [&](void*) {
    {
      std::lock_guard lock(sampling_mu);
      sampling = false;
    }
    sampling_cv.notify_all();
    sampler.join();
  });

  // One graph builder dies with -9 while reports arrive, and comes back on its ports.
  ASSERT_TRUE(WaitFor([&] { return pg_.Number("SELECT count(*) FROM reports") >= 5; }, 120s)) << fleet.log() << builders[0]->log();
  builders[1]->Kill();
  ASSERT_TRUE(WaitFor([&] { return !builders[1]->running(); }, 10s));
  auto restarted = Builder(2, builders[1].get());
  builders[1] = std::move(restarted);
  ASSERT_TRUE(WaitFor([&] { return Get(builders[1]->url("/readiness", "status")).status == 200; }, 60s)) << builders[1]->log();

  // The decision, then every engine serves it within a few seconds, and keeps serving it.
  ASSERT_TRUE(WaitFor([&] { return pg_.Number("SELECT count(*) FROM brakes") == 1; }, 180s)) << fleet.log();
  const auto decided = std::chrono::steady_clock::now();
  for (size_t n = 0; n < engines.size(); ++n) {
    const std::string base = engines[n]->url("");
    ASSERT_TRUE(WaitFor([&] { return Braked(base); }, 30s)) << engines[n]->log();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - decided).count();
    std::printf("policy engine %zu served the brake %.1f s after it was decided\n", n, seconds);
    EXPECT_LT(seconds, 15) << "a second to follow the database, a second to fetch, and a wide margin for a loaded machine";
  }
  // Watched from the first answer to the last (the sampler below): no engine answered
  // without the brake once it had answered with it, and no answer's generation went back
  // (what an agent checking signatures refuses as a rollback), through the kill, the
  // restart and the brake spreading.
  ASSERT_TRUE(WaitFor([&] { return !fleet.running(); }, 180s)) << fleet.log();
  ASSERT_EQ(fleet.Stop(), 0) << fleet.log();
  stop_sampler.reset();
  EXPECT_EQ(unbraked_after_braked, 0) << "of " << asked << " answers";
  EXPECT_EQ(rolled_back, 0) << "of " << asked << " answers";
  EXPECT_GT(generations[0], 0u) << "answers carry their generation";
  EXPECT_GT(asked, 300);

  EXPECT_EQ(pg_.Number("SELECT count(*) FROM brake_events WHERE action = 'applied'"), 1) << "braked once";
  // Both builders serve the same graph, numbered alike.
  const auto a = Answer(builders[0]->url("")), b = Answer(builders[1]->url(""));
  EXPECT_EQ(a.body, b.body);
  const std::string* generation_a = a.Header(server::kGenerationHeader);
  const std::string* generation_b = b.Header(server::kGenerationHeader);
  ASSERT_TRUE(generation_a && generation_b);
  EXPECT_EQ(*generation_a, *generation_b);
  Summary replicated;
  ASSERT_TRUE(replicated.Read(dir_ / "fleet")) << fleet.log();
  EXPECT_EQ(replicated.Refused(), "{}") << "no genuine report refused";
  for (auto& e : engines) {
    EXPECT_LE(testing::MetricValue(Get(e->url("/metrics", "status")).body, R"(cincinnati_pe_reports_refused_total{reason="unknown_poller"})"), 0);
  }
  const int64_t failed_replicated = replicated.Int("/edges/0/failed");

  // The same fleet against one `serve`: as many clusters fail on the bad edge.
  std::vector<std::string> single = {CINCINNATI_BINARY, "fleet", "simulate", "--releases", (kExample / "releases").string(),
                                     "--graph-data", (kExample / "graph-data").string(), "--serve-arg=--reports.min_poller_age_secs=600",
                                     "--serve-arg=--reports.min_polls=3"};
  const std::vector<std::string> single_args = FleetArgs(dir_ / "single");
  single.insert(single.end(), single_args.begin(), single_args.end());
  ChildProcess one(single);
  ASSERT_TRUE(WaitFor([&] { return !one.running(); }, 300s)) << one.log();
  ASSERT_EQ(one.Stop(), 0) << one.log();
  Summary alone;
  ASSERT_TRUE(alone.Read(dir_ / "single")) << one.log();
  const int64_t failed_alone = alone.Int("/edges/0/failed");
  std::printf("clusters failed on the bad edge: %lld replicated, %lld with one serve; the rule crossed (by the reports accepted) "
              "at %s and %s, braked %lld and %lld s after\n",
              static_cast<long long>(failed_replicated), static_cast<long long>(failed_alone), replicated.Text("/edges/0/ruleCrossed").c_str(),
              alone.Text("/edges/0/ruleCrossed").c_str(), static_cast<long long>(replicated.Int("/edges/0/brakeAfterRuleSeconds")),
              static_cast<long long>(alone.Int("/edges/0/brakeAfterRuleSeconds")));
  ASSERT_GT(failed_alone, 0);
  EXPECT_LE(std::abs(static_cast<double>(failed_replicated - failed_alone)), 0.2 * static_cast<double>(failed_alone));
}

}  // namespace
}  // namespace cincinnati
