// Update reports and automatic brakes over real HTTP: `serve`, and a graph
// builder with a policy engine forwarding to it, on the 4.x example. Clusters poll with
// their ids, report how their update from 4.13.1 to 4.13.2 went, and the edge is braked
// in every answer once 3 of 20 failed; a person clears it. Reports that cannot be
// trusted are refused and counted; a graph builder killed with -9 loses nothing.
#include <gtest/gtest.h>

#include <regex>

#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "core/date_time.h"
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
using testing::WaitFor;

const fs::path kExample = testing::Examples() / "ocp-4x";
constexpr char kRisk[] = "AutomaticallyBlocked_4_13_1_to_4_13_2";

using testing::TestClusterId;
std::string ClusterId(int n) { return TestClusterId(n); }

http::Result Post(const std::string& url, const std::string& body, std::vector<std::string> headers = {"Content-Type: application/json"}) {
  http::RequestOptions o;
  o.method = "POST";
  o.body = body;
  o.headers = std::move(headers);
  o.timeout = 10s;
  return http::Request(url, o);
}

// `at`: the attempt's time on the service's clock (0: now).
// Started at once after the polls of the same second: a poller first seen at `from` before it started.
std::string Report(int n, bool failed, const std::string& attempt = "a1", int64_t at = 0) {
  if (at == 0) at = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return EncodeUpdateReport(testing::TestReport(n, failed, attempt, at));
}

// The graph as a cluster at 4.13.1 on stable-4.13 gets it.
std::string Graph(const std::string& base) {
  return Get(base + "/graph?channel=stable-4.13&arch=amd64&version=4.13.1", {"Accept: application/json"}).body;
}

class ReportServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteFile(dir_ / "admin.token", "let-me-clear\n");
    testing::WriteFile(dir_ / "reports.token", "policy-engines\n");
  }
  std::vector<std::string> BuilderArgs() {
    return {"--releases", (kExample / "releases").string(), "--graph-data", (kExample / "graph-data").string(),
            "--reports.state_dir", (dir_ / "reports").string(), "--brakes.url_base", "https://updates.example.com/api/upgrades_info/v1/brakes", "--brakes.admin_token_file", (dir_ / "admin.token").string()};
  }
  // Clusters 1..20 poll at 4.13.1 through `base`, then report; `failed` of them failed.
  void PollAndReport(const std::string& base, int failed, int64_t at = 0) {
    for (int n = 1; n <= 20; ++n) {
      ASSERT_EQ(Get(base + "/graph?channel=stable-4.13&version=4.13.1&id=" + ClusterId(n), {"Accept: application/json"}).status, 200);
    }
    for (int n = 1; n <= 20; ++n) {
      auto r = Post(base + "/v1/reports?id=" + ClusterId(n), Report(n, n <= failed, "a1", at));
      ASSERT_EQ(r.status, 200) << r.body;
      EXPECT_EQ(r.body, R"({"status":"accepted"})");
    }
  }
  // As agents do with the default rule: clusters 1..20 poll at 4.13.1 through `base`,
  // announce their attempts (Started), then report how they ended; `failed` of them failed.
  void PollStartAndReport(const std::string& base, int failed) {
    const int64_t at = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (int n = 1; n <= 20; ++n) {
      ASSERT_EQ(Get(base + "/graph?channel=stable-4.13&version=4.13.1&id=" + ClusterId(n), {"Accept: application/json"}).status, 200);
    }
    for (int n = 1; n <= 20; ++n) {
      UpdateReport start = testing::TestReport(n, false, "a1", at);
      start.result = UpdateResult::kStarted;
      start.ended = 0;
      auto r = Post(base + "/v1/reports?id=" + ClusterId(n), EncodeUpdateReport(start));
      ASSERT_EQ(r.status, 200) << r.body;
    }
    for (int n = 1; n <= 20; ++n) {
      auto r = Post(base + "/v1/reports?id=" + ClusterId(n), Report(n, n <= failed, "a1", at));
      ASSERT_EQ(r.status, 200) << r.body;
      EXPECT_EQ(r.body, R"({"status":"accepted"})");
    }
  }
  testing::TempDir dir_;
};

// The default rule (sequential): agents announce their attempts (Started reports), one in
// three fails, and the service brakes the edge in start order, saying the edge's rate
// and the known-bad sites'; `brakes list` shows it. An unknown rule stops the service at
// start, naming the accepted ones.
TEST_F(ReportServiceTest, TheSequentialRuleBrakesInStartOrderAndAnUnknownRuleIsRefused) {
  std::vector<std::string> bad = BuilderArgs();
  bad.insert(bad.end(), {"--brakes.rule", "bayes"});
  ServiceProcess refused("serve", bad);
  ASSERT_TRUE(WaitFor([&] { return !refused.running(); }, 60s)) << refused.log();
  EXPECT_NE(refused.log().find("brakes.rule 'bayes': must be \"sequential\""), std::string::npos) << refused.log();

  std::vector<std::string> args = BuilderArgs();
  args.insert(args.end(), {"--reports.min_poller_age_secs", "0", "--reports.min_polls", "1", "--testing.now", "2030-01-01T00:00:00Z"});
  ServiceProcess serve("serve", args);
  ASSERT_TRUE(serve.running()) << serve.log();
  const std::string base = serve.url("/api/upgrades_info");
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readiness", "status")).status == 200; }, 60s)) << serve.log();
  constexpr int kClusters = 60;
  constexpr int64_t kStart = 1893456000;  // the service's frozen now
  for (int n = 1; n <= kClusters; ++n) {
    ASSERT_EQ(Get(base + "/graph?channel=stable-4.13&version=4.13.1&id=" + ClusterId(n), {"Accept: application/json"}).status, 200);
  }
  for (int n = 1; n <= kClusters; ++n) {
    UpdateReport start = testing::TestReport(n, false, "a1", kStart);
    start.result = UpdateResult::kStarted;
    start.ended = 0;
    auto r = Post(base + "/v1/reports?id=" + ClusterId(n), EncodeUpdateReport(start));
    ASSERT_EQ(r.status, 200) << r.body;
  }
  ASSERT_EQ(Graph(base).find(kRisk), std::string::npos) << "starts alone brake nothing";
  for (int n = 1; n <= kClusters && Graph(base).find(kRisk) == std::string::npos; ++n) {
    auto r = Post(base + "/v1/reports?id=" + ClusterId(n), EncodeUpdateReport(testing::TestReport(n, n % 3 == 0, "a1", kStart)));
    ASSERT_EQ(r.status, 200) << r.body;
  }
  ASSERT_TRUE(WaitFor([&] { return Graph(base).find(kRisk) != std::string::npos; }, 30s)) << serve.log();
  const std::string braked = Graph(base);
  EXPECT_TRUE(std::regex_search(braked, std::regex(R"(\d+ of 60 clusters that updated from 4\.13\.1 to 4\.13\.2 failed \(\d+\.\d%; )"
                                                   R"(clusters whose previous update failed, not counted: none\), more than 5% with )"
                                                   R"(95% confidence over the whole rollout)")))
      << braked;
  auto listed = testing::RunCincinnati("brakes list --url " + base);
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_TRUE(std::regex_search(listed.out, std::regex(R"(4\.13\.1 +4\.13\.2 +active +\d+ +60 )"))) << listed.out;
}

// The sequential rule's prior, on the command line or under [brakes] in the TOML file: a
// value out of range or not a number stops the service at start, naming the setting.
TEST_F(ReportServiceTest, ABadPriorStopsTheServiceNamingTheSetting) {
  std::string args;
  for (const std::string& a : BuilderArgs()) args += " " + a;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--brakes.prior_mean 0.03", "brakes.prior_mean: must be above brakes.threshold and below 1"},
      {"--brakes.prior_mean 1", "brakes.prior_mean: must be above brakes.threshold and below 1"},
      {"--brakes.prior_mean 0.2x", "brakes.prior_mean: '0.2x' is not a number"},
      {"--brakes.prior_strength 0", "brakes.prior_strength: must be between 0.5 and 1000000"},
      {"--brakes.prior_strength -3", "brakes.prior_strength: must be between 0.5 and 1000000"},
      // Given with the Wilson rule, a bad prior is still a mistake.
      {"--brakes.rule wilson --brakes.prior_strength nan", "brakes.prior_strength: must be between 0.5 and 1000000"},
  };
  for (const auto& [flags, message] : cases) {
    auto refused = testing::RunCincinnati("serve" + args + " " + flags);
    EXPECT_EQ(refused.exit_code, 1) << flags;
    EXPECT_NE(refused.err.find("error: " + message), std::string::npos) << flags << ": " << refused.err;
  }
  testing::WriteFile(dir_ / "serve.toml", "[brakes]\nprior_mean = \"0.04\"\n");
  auto toml = testing::RunCincinnati("serve -c " + (dir_ / "serve.toml").string() + args);
  EXPECT_EQ(toml.exit_code, 1);
  EXPECT_NE(toml.err.find("brakes.prior_mean: must be above brakes.threshold and below 1"), std::string::npos) << toml.err;
}

TEST_F(ReportServiceTest, ThreeFailuresOfTwentyBrakeTheEdgeAndAPersonClearsIt) {
  // On the service's clock, frozen in 2030 here: the brake is dated by it. The Wilson
  // rule, selected: its 3 of 20 are this test's numbers (the default rule's flow: above).
  std::vector<std::string> args = BuilderArgs();
  args.insert(args.end(), {"--brakes.rule", "wilson", "--reports.min_poller_age_secs", "0", "--reports.min_polls", "1", "--testing.now", "2030-01-01T00:00:00Z"});
  ServiceProcess serve("serve", args);
  ASSERT_TRUE(serve.running()) << serve.log();
  const std::string base = serve.url("/api/upgrades_info");
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readiness", "status")).status == 200; }, 60s)) << serve.log();
  ASSERT_EQ(Graph(base).find(kRisk), std::string::npos);
  // Attempts the reporters date 1970: the brake's times are the service's, when the
  // reports arrived, never theirs.
  ASSERT_NO_FATAL_FAILURE(PollAndReport(base, 3, 1));

  ASSERT_TRUE(WaitFor([&] { return Graph(base).find(kRisk) != std::string::npos; }, 30s)) << serve.log();
  const std::string braked = Graph(base);
  EXPECT_NE(braked.find("Automatically blocked at 2030-01-01T00:00:00Z: "), std::string::npos) << braked;
  EXPECT_NE(braked.find("First failure 2030-01-01T00:00:00Z."), std::string::npos) << braked;
  EXPECT_EQ(testing::MetricValue(Get(serve.url("/metrics", "status")).body, "cincinnati_gb_brake_delay_seconds_sum"), 0)
      << "not sixty years";
  EXPECT_NE(braked.find(R"("matchingRules":[{"type":"Always"}])"), std::string::npos) << braked;
  EXPECT_NE(braked.find("3 of 20 clusters that updated from 4.13.1 to 4.13.2 failed"), std::string::npos) << braked;
  const fs::path file = dir_ / "reports" / "blocked-edges" / (std::string("4.13.2-") + kRisk + ".yaml");
  EXPECT_TRUE(fs::exists(file));
  // Its hint is a command that works as written once the placeholders are filled in.
  EXPECT_NE(testing::ReadFile(file).find("cincinnati brakes clear --url https://updates.example.com/api/upgrades_info "
                                         "--token-file ADMIN_TOKEN_FILE --from 4.13.1 --to 4.13.2 --by YOUR_NAME"),
            std::string::npos)
      << testing::ReadFile(file);
  // The file as written passes graph-data's own check, for a person to commit it.
  testing::TempDir graph_data;
  fs::copy(kExample / "graph-data", graph_data.path(), fs::copy_options::recursive);
  fs::create_directories(graph_data / "blocked-edges");
  fs::copy_file(file, graph_data / "blocked-edges" / file.filename());
  auto checked = testing::RunCincinnati("graph-data check " + graph_data.path().string());
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err << testing::ReadFile(file);
  auto why = Get(base + "/v1/explain?channel=stable-4.13&version=4.13.1&to=4.13.2");
  EXPECT_NE(why.body.find(kRisk), std::string::npos) << why.body;
  EXPECT_NE(why.body.find(std::string("blocked-edges/4.13.2-") + kRisk + ".yaml"), std::string::npos) << why.body;
  auto listed = testing::RunCincinnati("brakes list --url " + base);
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_TRUE(std::regex_search(listed.out, std::regex(R"(4\.13\.1 +4\.13\.2 +active +3 +20 +\S+ +blocked-edges/4\.13\.2-)"))) << listed.out;
  const std::string metrics = Get(serve.url("/metrics", "status")).body;
  EXPECT_NE(metrics.find("cincinnati_gb_brakes_active 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("cincinnati_gb_reports_accepted_total 20\n"), std::string::npos) << metrics;

  // A note that would change the file's YAML is refused.
  auto injected = Post(base + "/v1/brakes/confirm", R"({"from":"4.13.1","to":"4.13.2","by":"eve","note":"ok\rmessage: x"})",
                       {"Content-Type: application/json", "Authorization: Bearer let-me-clear"});
  EXPECT_EQ(injected.status, 400) << injected.body;
  EXPECT_NE(injected.body.find("without control characters"), std::string::npos) << injected.body;
  // Clearing needs the admin token; then the edge is offered again and the file is gone.
  auto anonymous = testing::RunCincinnati("brakes clear --url " + base + " --from 4.13.1 --to 4.13.2 --by mallory");
  EXPECT_EQ(anonymous.exit_code, 1);
  EXPECT_NE(anonymous.err.find("HTTP 401"), std::string::npos) << anonymous.err;
  EXPECT_NE(anonymous.err.find("none was given (--token-file)"), std::string::npos) << anonymous.err;
  testing::WriteFile(dir_ / "wrong.token", "not-the-token\n");
  auto wrong = testing::RunCincinnati("brakes clear --url " + base + " --from 4.13.1 --to 4.13.2 --by mallory --token-file " +
                                      (dir_ / "wrong.token").string());
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.err.find("the token given is not the brakes' admin token"), std::string::npos) << wrong.err;
  auto cleared = testing::RunCincinnati("brakes clear --url " + base + " --from 4.13.1 --to 4.13.2 --by alice --note OCPBUGS-1 --token-file " +
                                        (dir_ / "admin.token").string());
  EXPECT_EQ(cleared.exit_code, 0) << cleared.err;
  EXPECT_NE(cleared.out.find("cleared"), std::string::npos) << cleared.out;
  ASSERT_TRUE(WaitFor([&] { return Graph(base).find(kRisk) == std::string::npos; }, 30s));
  EXPECT_FALSE(fs::exists(file));
  // The list names no file for a cleared brake; with the admin token it says who cleared it and why.
  auto after = testing::RunCincinnati("brakes list --url " + base);
  EXPECT_TRUE(std::regex_search(after.out, std::regex(R"(4\.13\.1 +4\.13\.2 +cleared +3 +20 +\S+ +-\n)"))) << after.out;
  EXPECT_EQ(after.out.find("BY"), std::string::npos) << after.out;
  auto admin = testing::RunCincinnati("brakes list --url " + base + " --token-file " + (dir_ / "admin.token").string());
  EXPECT_TRUE(std::regex_search(admin.out, std::regex(R"(4\.13\.1 +4\.13\.2 +cleared +3 +20 +\S+ +- +alice +OCPBUGS-1\n)")))
      << admin.out;
  EXPECT_EQ(serve.Stop(), 0) << serve.log();
}

// A brake's risk URL is written into its graph-data file, whose check takes only https
// URLs: a service with brakes on starts only with an https:// brakes.url_base.
TEST_F(ReportServiceTest, BrakesNeedAnHttpsUrlBaseAtStart) {
  for (const std::string& url : {std::string(), std::string("http://127.0.0.1:8081/api/upgrades_info/v1/brakes")}) {
    std::vector<std::string> args = {CINCINNATI_BINARY, "serve", "--releases", (kExample / "releases").string(), "--graph-data",
                                     (kExample / "graph-data").string(), "--reports.state_dir", (dir_ / "reports").string(),
                                     "--service.port", "0", "--status.port", "0"};
    if (!url.empty()) args.insert(args.end(), {"--brakes.url_base", url});
    testing::ChildProcess serve(args);
    ASSERT_TRUE(WaitFor([&] { return !serve.running(); }, 30s)) << url;
    EXPECT_NE(serve.Stop(), 0);
    EXPECT_NE(serve.log().find("brakes.url_base"), std::string::npos) << serve.log();
    EXPECT_NE(serve.log().find("https"), std::string::npos) << serve.log();
  }
}

TEST_F(ReportServiceTest, ReportsThatCannotBeTrustedAreRefusedAndCounted) {
  std::vector<std::string> args = BuilderArgs();
  args.insert(args.end(), {"--reports.min_poller_age_secs", "0", "--reports.min_polls", "1", "--reports.per_cluster_per_day", "3"});
  ServiceProcess serve("serve", args);
  ASSERT_TRUE(serve.running()) << serve.log();
  const std::string base = serve.url("/api/upgrades_info");
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readiness", "status")).status == 200; }, 60s)) << serve.log();
  const std::string reports = base + "/v1/reports?id=" + ClusterId(1);
  // Never seen polling at 4.13.1.
  auto stranger = Post(reports, Report(1, true));
  EXPECT_EQ(stranger.status, 403);
  EXPECT_NE(stranger.body.find(R"("kind":"unknown_poller")"), std::string::npos) << stranger.body;
  ASSERT_EQ(Get(base + "/graph?channel=stable-4.13&version=4.13.1&id=" + ClusterId(1), {"Accept: application/json"}).status, 200);
  EXPECT_EQ(Post(reports, "{not json").status, 400);
  EXPECT_EQ(Post(reports, Report(1, true), {"Content-Type: text/plain"}).status, 415);
  EXPECT_EQ(Post(reports, std::string(5000, ' ') + Report(1, true)).status, 413);
  auto other = Post(base + "/v1/reports?id=" + ClusterId(2), Report(1, true));
  EXPECT_EQ(other.status, 400) << "the query's id must be the report's";
  EXPECT_NE(other.body.find("the query's id must be the report's clusterID"), std::string::npos) << other.body;
  UpdateReport nowhere = testing::TestReport(1, true, "a9", std::chrono::duration_cast<std::chrono::seconds>(
                                                                std::chrono::system_clock::now().time_since_epoch()).count(),
                                             "network", "4.13.1", "9.9.9");
  UpdateReport future = testing::TestReport(1, true, "a8", std::chrono::duration_cast<std::chrono::seconds>(
                                                              std::chrono::system_clock::now().time_since_epoch()).count() + 3 * 3600);
  auto ahead = Post(reports, EncodeUpdateReport(future));
  EXPECT_EQ(ahead.status, 400) << "a time from the future would pass for an old poller";
  EXPECT_NE(ahead.body.find("the attempt ends after the service's now"), std::string::npos) << ahead.body;
  auto fake = Post(reports, EncodeUpdateReport(nowhere));
  EXPECT_EQ(fake.status, 400) << "no such edge to brake";
  EXPECT_NE(fake.body.find("4.13.1 -> 9.9.9 is not an update edge of channel stable-4.13 for amd64 in this service's graph"),
            std::string::npos)
      << fake.body;
  // The report on no edge used one of the day's three; accepted once, then a duplicate,
  // which costs no allowance; a third new report is one too many.
  EXPECT_EQ(Post(reports, Report(1, true)).body, R"({"status":"accepted"})");
  EXPECT_EQ(Post(reports, Report(1, true)).body, R"({"status":"duplicate"})");
  EXPECT_EQ(Post(reports, Report(1, true, "a3")).body, R"({"status":"accepted"})") << "resends are free";
  auto flood = Post(reports, Report(1, true, "a4"));
  EXPECT_EQ(flood.status, 429) << flood.body;
  const std::string metrics = Get(serve.url("/metrics", "status")).body;
  for (const char* reason : {"unknown_poller", "invalid_report", "not_json", "too_large", "rate_limited"}) {
    EXPECT_NE(metrics.find(fmt::format("cincinnati_gb_reports_refused_total{{reason=\"{}\"}} ", reason)), std::string::npos)
        << reason << "\n" << metrics;
  }
  EXPECT_NE(metrics.find("cincinnati_gb_reports_duplicate_total 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("cincinnati_gb_reports_received_total{result=\"Failed\"} 2\n"), std::string::npos) << metrics;
  EXPECT_EQ(serve.Stop(), 0) << serve.log();
}

// With the default settings a reporter must have polled at `from` three times, the
// first half an hour before: on a clock running 600 times as fast (10 minutes a second).
TEST_F(ReportServiceTest, WithTheDefaultsAReporterHasBeenPollingForHalfAnHour) {
  const double epoch = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const int64_t t0 = 1893456000;  // 2030-01-01T00:00:00Z
  std::vector<std::string> args = BuilderArgs();
  args.insert(args.end(), {"--testing.now", "2030-01-01T00:00:00Z", "--testing.time_scale", "600", "--testing.epoch",
                           fmt::format("{:.6f}", epoch)});
  ServiceProcess serve("serve", args);
  ASSERT_TRUE(serve.running()) << serve.log();
  const std::string base = serve.url("/api/upgrades_info");
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readiness", "status")).status == 200; }, 60s)) << serve.log();
  auto service_now = [&] {
    const double real = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    return t0 + static_cast<int64_t>((real - epoch) * 600);
  };
  auto poll = [&](int n) {
    return Get(base + "/graph?channel=stable-4.13&version=4.13.1&id=" + ClusterId(n), {"Accept: application/json"}).status;
  };
  // Cluster 1 polls three times, three service minutes apart; cluster 2 once.
  const int64_t first = service_now();
  ASSERT_EQ(poll(1), 200);
  ASSERT_EQ(poll(2), 200);
  for (int i = 1; i <= 2; ++i) {
    ASSERT_TRUE(WaitFor([&] { return service_now() >= first + 180 * i + 5; }, 10s));
    ASSERT_EQ(poll(1), 200);
  }
  auto report = [&](int n) { return Post(base + "/v1/reports?id=" + ClusterId(n), Report(n, true, "a1", service_now())); };
  auto early = report(1);
  EXPECT_EQ(early.status, 403) << "polling for less than half an hour: " << early.body;
  ASSERT_TRUE(WaitFor([&] { return service_now() >= first + 1800 + 30; }, 20s));
  auto accepted = report(1);
  EXPECT_EQ(accepted.status, 200) << accepted.body;
  auto once = report(2);
  EXPECT_EQ(once.status, 403) << "one poll is not enough: " << once.body;
  EXPECT_NE(once.body.find("unknown_poller"), std::string::npos);
  EXPECT_EQ(serve.Stop(), 0) << serve.log();
}

TEST_F(ReportServiceTest, APolicyEngineForwardsToItsGraphBuilderWhichLosesNothingToKillNine) {
  std::vector<std::string> gb_args = BuilderArgs();
  gb_args.insert(gb_args.end(), {"--reports.token_file", (dir_ / "reports.token").string(), "--service.pause_secs", "3600"});
  auto builder = std::make_unique<ServiceProcess>("graph-builder", gb_args);
  ASSERT_TRUE(builder->running()) << builder->log();
  ASSERT_TRUE(WaitFor([&] { return Get(builder->url("/readiness", "status")).status == 200; }, 60s)) << builder->log();
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", builder->url("/graph"), "--upstream.cincinnati.cache_ttl_secs", "1",
                                          "--reports.enabled", "true", "--reports.upstream_token_file", (dir_ / "reports.token").string(),
                                          "--reports.min_poller_age_secs", "0", "--reports.min_polls", "1"});
  ASSERT_TRUE(engine.running()) << engine.log();
  ASSERT_TRUE(WaitFor([&] { return Get(engine.url("/readyz", "status")).status == 200; }, 60s)) << engine.log();
  // With the default rule, 5 failures of 20 announced attempts brake the edge.
  ASSERT_NO_FATAL_FAILURE(PollStartAndReport(engine.url(""), 5));
  ASSERT_TRUE(WaitFor([&] { return Graph(engine.url("")).find(kRisk) != std::string::npos; }, 60s)) << engine.log() << builder->log();

  // The graph builder dies with -9 and comes back: the brake and the counts are still there.
  builder->Kill();
  builder = std::make_unique<ServiceProcess>("graph-builder", gb_args);
  ASSERT_TRUE(builder->running()) << builder->log();
  ASSERT_TRUE(WaitFor([&] { return Get(builder->url("/graph"), {"Accept: application/json"}).body.find(kRisk) != std::string::npos; }, 60s))
      << builder->log();
  auto listed = testing::RunCincinnati("brakes list --json --url " + builder->url(""));
  EXPECT_NE(listed.out.find(R"("clusters":20,"failures":5)"), std::string::npos) << listed.out;
  // A batch without the token is refused.
  auto forged = Post(builder->url("/v1/reports"), "[" + Report(30, true) + "]");
  EXPECT_EQ(forged.status, 401) << forged.body;
}

}  // namespace
}  // namespace cincinnati
