// Update reports from outsiders, over real processes: a graph builder, a policy engine on
// it and a second one chained behind the first (forwarding client queries, relaying
// reports to the graph builder, as docs/reports-and-brakes.md says to chain them). Reports on edges that
// do not exist where they say, from ids that did not poll at the edge's source, or
// counted against a failed poll, are refused at every door, and nothing is braked.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "core/update_report.h"
#include "http/client.h"
#include "service_util.h"
#include "test_util.h"
#include "update_report_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::Get;
using testing::ServiceProcess;
using testing::TestClusterId;
using testing::WaitFor;

const fs::path kExample = testing::Examples() / "ocp-4x";

int64_t Now() { return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count(); }

http::Result Post(const std::string& url, const std::string& body, const std::vector<std::string>& extra = {}) {
  http::RequestOptions o;
  o.method = "POST";
  o.body = body;
  o.headers = {"Content-Type: application/json"};
  o.headers.insert(o.headers.end(), extra.begin(), extra.end());
  o.timeout = 10s;
  return http::Request(url, o);
}

int Poll(const std::string& base, int n, const std::string& version, const std::string& channel = "stable-4.13") {
  return Get(base + "/graph?channel=" + channel + "&arch=amd64&version=" + version + "&id=" + TestClusterId(n),
             {"Accept: application/json"})
      .status;
}

// Cluster n's failed attempt on from -> to, reported to `base`.
http::Result Report(const std::string& base, int n, const std::string& from, const std::string& to,
                    const std::string& channel = "stable-4.13", const std::string& attempt = "a1") {
  UpdateReport r = testing::TestReport(n, true, attempt, Now(), "network", from, to);
  r.channel = channel;
  return Post(base + "/v1/reports?id=" + TestClusterId(n), EncodeUpdateReport(r));
}

class ReportAttackTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::WriteFile(dir_ / "reports.token", "policy-engines\n"); }
  std::vector<std::string> BuilderArgs(const std::string& state) {
    return {"--releases", (kExample / "releases").string(), "--graph-data", (kExample / "graph-data").string(),
            "--reports.state_dir", (dir_ / state).string(), "--brakes.url_base", "https://updates.example.com/api/upgrades_info/v1/brakes", "--reports.token_file", (dir_ / "reports.token").string(),
            "--service.pause_secs", "3600"};
  }
  // A policy engine on `upstream` that takes reports (from any id that polled once) and
  // relays them to `reports_url`.
  std::unique_ptr<ServiceProcess> Engine(const std::string& upstream, const std::string& reports_url) {
    auto engine = std::make_unique<ServiceProcess>(
        "policy-engine", std::vector<std::string>{"--upstream.cincinnati.url", upstream, "--upstream.cincinnati.cache_ttl_secs", "1",
                                                  "--reports.enabled", "true", "--reports.upstream_url", reports_url,
                                                  "--reports.upstream_token_file", (dir_ / "reports.token").string(),
                                                  "--reports.min_poller_age_secs", "0", "--reports.min_polls", "1"});
    EXPECT_TRUE(engine->running()) << engine->log();
    return engine;
  }
  testing::TempDir dir_;
};

TEST_F(ReportAttackTest, EveryDoorChecksTheEdgeInTheReportsChannelAndNothingIsBraked) {
  ServiceProcess builder("graph-builder", BuilderArgs("reports"));
  ASSERT_TRUE(WaitFor([&] { return Get(builder.url("/readiness", "status")).status == 200; }, 60s)) << builder.log();
  const std::string batches = builder.url("/v1/reports");
  auto first = Engine(builder.url("/graph"), batches);
  ASSERT_TRUE(WaitFor([&] { return Get(first->url("/readyz", "status")).status == 200; }, 60s)) << first->log();
  auto chained = Engine(first->url("/graph"), batches);
  ASSERT_TRUE(WaitFor([&] { return Get(chained->url("/readyz", "status")).status == 200; }, 60s)) << chained->log();

  for (ServiceProcess* engine : {first.get(), chained.get()}) {
    const std::string base = engine->url("");
    for (int n = 1; n <= 20; ++n) ASSERT_EQ(Poll(base, n, "4.13.1"), 200);
    for (int n = 1; n <= 20; ++n) {
      SCOPED_TRACE(engine == first.get() ? "the first engine" : "the chained engine");
      for (const auto& [to, channel, why] : std::vector<std::tuple<std::string, std::string, std::string>>{
               {"4.99.0", "stable-4.13", "no such release"},
               {"4.12.3", "stable-4.13", "a downgrade"},
               {"4.13.3", "stable-4.13", "an edge of fast-4.13 alone"}}) {
        // Refused: 400, or from the chained engine 503 while its checks' fetch budget (5 a
        // second, for answers of single clusters) is spent: never recorded either way.
        auto refused = Report(base, n, "4.13.1", to, channel);
        const bool checked = refused.status == 400 && refused.body.find("is not an update edge of channel " + channel) != std::string::npos;
        const bool unchecked = engine == chained.get() && refused.status == 503;
        EXPECT_TRUE(checked || unchecked) << why << ": " << refused.status << " " << refused.body;
      }
    }
  }
  // An edge into a hotfix release, for one customer's clusters, is no edge to report on:
  // nobody brakes it, and nobody learns from the answer that the hotfix exists.
  for (int n = 24; n <= 25; ++n) ASSERT_EQ(Poll(first->url(""), n, "4.12.3"), 200);
  auto hotfix = Report(first->url(""), 24, "4.12.3", "4.13.1-hotfix.1");
  auto nothing = Report(first->url(""), 25, "4.12.3", "4.13.1-hotfix.2");
  EXPECT_EQ(hotfix.status, 400) << hotfix.body;
  EXPECT_EQ(hotfix.body.substr(0, 40), nothing.body.substr(0, 40)) << "the same answer as for a release that does not exist";
  // A real edge of fast-4.13 is taken from the chained engine (it asks its upstream for
  // the answer this cluster gets).
  ASSERT_EQ(Poll(chained->url(""), 21, "4.13.1", "fast-4.13"), 200);
  http::Result real;
  EXPECT_TRUE(WaitFor([&] { return (real = Report(chained->url(""), 21, "4.13.1", "4.13.3", "fast-4.13")).status != 503; }, 30s));
  EXPECT_EQ(real.status, 200) << real.body << chained->log();

  // The graph builder checks again whatever a policy engine passed on.
  UpdateReport junk = testing::TestReport(30, true, "e1", Now(), "network", "4.13.1", "4.99.0");
  auto batch = Post(batches, "[" + EncodeUpdateReport(junk) + "]", {"Authorization: Bearer policy-engines"});
  ASSERT_EQ(batch.status, 200) << batch.body;
  EXPECT_NE(batch.body.find(R"("refused: 4.13.1 -> 4.99.0 is not an update edge of channel stable-4.13)"), std::string::npos)
      << batch.body;

  const std::string brakes = Get(builder.url("/v1/brakes")).body;
  EXPECT_EQ(brakes, R"({"brakes":[]})") << "nothing braked";
  const std::string metrics = Get(builder.url("/metrics", "status")).body;
  EXPECT_EQ(testing::MetricValue(metrics, R"(cincinnati_gb_reports_received_total{result="Failed"})"), 1) << metrics;
  EXPECT_EQ(testing::MetricValue(metrics, "cincinnati_gb_reports_off_graph_total"), 1) << metrics;

  // With nothing to check against (its upstream gone, no answer of that channel at hand),
  // the chained engine refuses with 503: the agent sends the report again later.
  ASSERT_EQ(Poll(chained->url(""), 23, "4.13.1", "candidate-4.13"), 200);
  first->Kill();
  auto unchecked = Report(chained->url(""), 23, "4.13.1", "4.13.2", "candidate-4.13");
  EXPECT_EQ(unchecked.status, 503) << unchecked.body;
  EXPECT_NE(unchecked.body.find("report_not_recorded"), std::string::npos) << unchecked.body;
}

// One polling id cannot spend what others need: its reports that fail the edge check use
// up its own daily allowance, never the global rate of everyone's, and a forwarding
// engine checks them on a fetch budget of its own, not the one its clients' polls use.
TEST_F(ReportAttackTest, OneIdFloodingMadeUpChannelsCostsOthersNothing) {
  ServiceProcess builder("graph-builder", BuilderArgs("reports"));
  ASSERT_TRUE(WaitFor([&] { return Get(builder.url("/readiness", "status")).status == 200; }, 60s)) << builder.log();
  auto first = Engine(builder.url("/graph"), builder.url("/v1/reports"));
  ASSERT_TRUE(WaitFor([&] { return Get(first->url("/readyz", "status")).status == 200; }, 60s)) << first->log();
  auto chained = Engine(first->url("/graph"), builder.url("/v1/reports"));
  ASSERT_TRUE(WaitFor([&] { return Get(chained->url("/readyz", "status")).status == 200; }, 60s)) << chained->log();
  const std::string base = chained->url("");
  ASSERT_EQ(Poll(base, 1, "4.13.1"), 200);  // the attacker's id
  ASSERT_EQ(Poll(base, 2, "4.13.1"), 200);  // a cluster's
  int limited = 0;
  for (int i = 0; i < 60; ++i) {
    const int status = Report(base, 1, "4.13.1", "4.13.2", fmt::format("made-up-{}", i), fmt::format("{:x}", i + 1)).status;
    EXPECT_TRUE(status == 400 || status == 503 || status == 429) << status;
    limited += status == 429;
    // New clusters' polls are answered meanwhile: the flood spends no fetch of theirs.
    if (i % 10 == 0) {
      EXPECT_EQ(Poll(base, 100 + i, "4.13.1"), 200) << i;
    }
  }
  EXPECT_EQ(limited, 60 - 24) << "24 reports a day for one id, refused ones included";
  // Another cluster's report waits at most for the checks' budget to refill (503: its
  // agent sends it again), and is never refused.
  http::Result cluster;
  EXPECT_TRUE(WaitFor([&] { return (cluster = Report(base, 2, "4.13.1", "4.13.2")).status != 503; }, 30s)) << cluster.body;
  EXPECT_EQ(cluster.status, 200) << cluster.body;
}

// "Polled at from or to" let twenty ids brake every edge into a version: they need only
// poll at the target. A report counts from an id that polled at the version it updated from.
TEST_F(ReportAttackTest, IdsThatPolledOnlyAtTheTargetBrakeNoEdgeIntoIt) {
  ServiceProcess builder("graph-builder", BuilderArgs("reports"));
  ASSERT_TRUE(WaitFor([&] { return Get(builder.url("/readiness", "status")).status == 200; }, 60s)) << builder.log();
  auto engine = Engine(builder.url("/graph"), builder.url("/v1/reports"));
  ASSERT_TRUE(WaitFor([&] { return Get(engine->url("/readyz", "status")).status == 200; }, 60s)) << engine->log();
  const std::string base = engine->url("");
  for (int n = 1; n <= 20; ++n) ASSERT_EQ(Poll(base, n, "4.13.2"), 200);
  for (int n = 1; n <= 20; ++n) {
    for (const auto& [from, attempt] : std::vector<std::pair<std::string, std::string>>{{"4.13.1", "a1"}, {"4.13.0", "b1"}, {"4.12.4", "c1"}}) {
      auto refused = Report(base, n, from, "4.13.2", "stable-4.13", attempt);
      EXPECT_EQ(refused.status, 403) << from << ": " << refused.body;
      EXPECT_NE(refused.body.find("unknown_poller"), std::string::npos) << refused.body;
    }
  }
  EXPECT_EQ(Get(builder.url("/v1/brakes")).body, R"({"brakes":[]})");
}

// A poll a policy engine could not answer (it had no graph yet) is no sighting.
TEST_F(ReportAttackTest, AFailedPollIsNoSighting) {
  const int port = testing::FreePort();
  const std::string upstream = fmt::format("http://127.0.0.1:{}", port);
  auto engine = Engine(upstream + "/graph", upstream + "/v1/reports");
  const std::string base = engine->url("");
  const int failed = Poll(base, 1, "4.13.1");
  EXPECT_GE(failed, 500) << "no upstream yet";
  auto early = Report(base, 1, "4.13.1", "4.13.2");
  EXPECT_EQ(early.status, 403) << "the failed poll was no sighting: " << early.body;
  ASSERT_EQ(Poll(base, 2, "4.13.1"), failed);
  // The graph builder comes up where the engine looks.
  std::vector<std::string> args = BuilderArgs("reports");
  args.insert(args.end(), {"--service.port", std::to_string(port)});
  ServiceProcess builder("graph-builder", args);
  ASSERT_TRUE(WaitFor([&] { return Get(engine->url("/readyz", "status")).status == 200; }, 60s)) << engine->log() << builder.log();
  auto still = Report(base, 1, "4.13.1", "4.13.2");
  EXPECT_EQ(still.status, 403) << still.body;
  ASSERT_EQ(Poll(base, 1, "4.13.1"), 200);
  auto taken = Report(base, 1, "4.13.1", "4.13.2");
  EXPECT_EQ(taken.status, 200) << taken.body << engine->log();
}

}  // namespace
}  // namespace cincinnati
