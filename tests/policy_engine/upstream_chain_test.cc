// Chains of policy engines with real processes: a forwarded answer outlives its
// upstream (stale-if-error), junk parameters and varying ids cannot multiply upstream
// fetches, and the upstream's kind is detected again instead of once for good.
#include <gtest/gtest.h>

#include "core/graph_json.h"
#include "service_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using testing::Get;
using testing::MetricValue;
using testing::ServiceProcess;
using testing::WaitFor;

const fs::path kExample = testing::Examples() / "ocp-4x";
const std::string kPrefix = "/api/upgrades_info";
const std::string kQuery = "channel=stable-4.13&arch=amd64";

std::vector<std::string> BuilderArgs(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--releases",          (kExample / "releases").string(),
                                   "--graph-data",        (kExample / "graph-data").string(),
                                   "--service.path_prefix", kPrefix,
                                   "--service.pause_secs", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<std::string> EngineArgs(const std::string& upstream, std::vector<std::string> extra = {},
                                    const std::string& ttl_secs = "1") {
  std::vector<std::string> args = {"--upstream.cincinnati.url", upstream, "--service.path_prefix", kPrefix,
                                   "--upstream.cincinnati.cache_ttl_secs", ttl_secs};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

bool Ready(ServiceProcess& s) { return Get(s.url("/readyz", "status")).status == 200; }

double StateIs(const ServiceProcess& s, const std::string& state) {
  return MetricValue(s, "cincinnati_pe_upstream_state{state=\"" + state + "\"}");
}

// GB -> PE1 -> PE2: PE1 stops; PE2 keeps answering what it had, byte for byte, past
// its TTL, counting stale answers; it recovers when PE1 is back on the same port.
TEST(UpstreamChainTest, LastPolicyEngineKeepsServingWhenTheMiddleOneStops) {
  ServiceProcess builder("graph-builder", BuilderArgs());
  auto middle = std::make_unique<ServiceProcess>("policy-engine", EngineArgs(builder.url(kPrefix + "/graph")));
  const int middle_port = middle->port("main");
  ServiceProcess last("policy-engine", EngineArgs(middle->url(kPrefix + "/graph")));
  ASSERT_TRUE(WaitFor([&] { return Ready(*middle) && Ready(last); })) << middle->log() << last.log();
  ASSERT_TRUE(WaitFor([&] { return Get(last.url(kPrefix + "/graph?" + kQuery)).status == 200; })) << last.log();
  const std::string before = Get(last.url(kPrefix + "/graph?" + kQuery)).body;
  EXPECT_EQ(StateIs(last, "forwarding"), 1);
  EXPECT_TRUE(ReadGraphJson(before).ok());

  EXPECT_EQ(middle->Stop(), 0);
  middle.reset();
  // Past the TTL (1 s) a refresh fails and the last good answer is served as stale.
  ASSERT_TRUE(WaitFor([&] {
    return Get(last.url(kPrefix + "/graph?" + kQuery)).status == 200 &&
           MetricValue(last, "cincinnati_pe_http_upstream_stale_answers_total") > 0;
  })) << last.log();
  for (int i = 0; i < 5; ++i) {
    auto again = Get(last.url(kPrefix + "/graph?" + kQuery));
    EXPECT_EQ(again.status, 200);
    EXPECT_EQ(again.body, before);
  }
  // A query it never answered has nothing to fall back on.
  auto unseen = Get(last.url(kPrefix + "/graph?channel=fast-4.13&arch=amd64"));
  EXPECT_EQ(unseen.status, 500);
  EXPECT_NE(unseen.body.find("failed_upstream_fetch"), std::string::npos) << unseen.body;

  ServiceProcess back("policy-engine",
                      EngineArgs(builder.url(kPrefix + "/graph"), {"--service.port", std::to_string(middle_port)}));
  ASSERT_TRUE(WaitFor([&] { return Ready(back); })) << back.log();
  ASSERT_TRUE(WaitFor([&] { return Get(last.url(kPrefix + "/graph?channel=fast-4.13&arch=amd64")).status == 200; }))
      << last.log();
  // Refreshed again: stale answers stop.
  ASSERT_TRUE(WaitFor([&] {
    Get(last.url(kPrefix + "/graph?" + kQuery));
    double stale = MetricValue(last, "cincinnati_pe_http_upstream_stale_answers_total");
    Get(last.url(kPrefix + "/graph?" + kQuery));
    return MetricValue(last, "cincinnati_pe_http_upstream_stale_answers_total") == stale;
  }));
  EXPECT_EQ(Get(last.url(kPrefix + "/graph?" + kQuery)).body, before);
}

// Parameters a policy engine does not read are not forwarded, so they cannot multiply
// upstream fetches; ids beyond the fetch budget get the id-less answer.
TEST(UpstreamChainTest, JunkParametersAndVaryingIdsDoNotChurnTheUpstream) {
  ServiceProcess builder("graph-builder", BuilderArgs());
  ServiceProcess middle("policy-engine", EngineArgs(builder.url(kPrefix + "/graph")));
  ServiceProcess last("policy-engine", EngineArgs(middle.url(kPrefix + "/graph"),
                                                  {"--upstream.cincinnati.kind", "policy-engine",
                                                   "--upstream.cincinnati.max_fetches_per_sec", "1"},
                                                  "300"));
  ASSERT_TRUE(WaitFor([&] { return Ready(middle) && Ready(last); })) << last.log();
  ASSERT_TRUE(WaitFor([&] { return Get(last.url(kPrefix + "/graph?" + kQuery)).status == 200; })) << last.log();
  const std::string general = Get(last.url(kPrefix + "/graph?" + kQuery)).body;
  const double fetches = MetricValue(last, "cincinnati_pe_http_upstream_requests_total");
  for (int i = 0; i < 20; ++i) {
    auto r = Get(last.url(kPrefix + "/graph?" + kQuery + "&junk=" + std::to_string(i) + "&x" + std::to_string(i)));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, general);
  }
  EXPECT_EQ(MetricValue(last, "cincinnati_pe_http_upstream_requests_total"), fetches);
  // 30 new cluster ids at once: at most a few fetches; the rest get the general answer
  // (no phased or hotfix data in this channel, so it is also theirs).
  for (int i = 0; i < 30; ++i) {
    char id[64];
    std::snprintf(id, sizeof id, "00000000-0000-4000-8000-%012d", i);
    auto r = Get(last.url(kPrefix + "/graph?" + kQuery + "&id=" + id));
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body, general);
  }
  EXPECT_LE(MetricValue(last, "cincinnati_pe_http_upstream_requests_total"), fetches + 5);
  EXPECT_GT(MetricValue(last, "cincinnati_pe_http_upstream_throttled_total"), 0);
  EXPECT_LE(MetricValue(last, "cincinnati_pe_forwarded_answers_cached"), 32);
}

// A graph builder that asks for parameters looks like a policy engine; once it serves
// a graph again, the policy engine goes back to sharing one graph.
TEST(UpstreamChainTest, AGraphBuilderAskingForParametersIsNotAPolicyEngineForGood) {
  auto builder = std::make_unique<ServiceProcess>(
      "graph-builder", BuilderArgs({"--service.mandatory_client_parameters", "channel"}));
  const int port = builder->port("main");
  ServiceProcess engine("policy-engine", EngineArgs(builder->url(kPrefix + "/graph")));
  ASSERT_TRUE(WaitFor([&] { return StateIs(engine, "forwarding") == 1; })) << engine.log();
  ASSERT_TRUE(WaitFor([&] { return Get(engine.url(kPrefix + "/graph?" + kQuery)).status == 200; })) << engine.log();
  const std::string forwarded = Get(engine.url(kPrefix + "/graph?" + kQuery)).body;

  EXPECT_EQ(builder->Stop(), 0);
  builder.reset();
  ServiceProcess plain("graph-builder", BuilderArgs({"--service.port", std::to_string(port)}));
  ASSERT_TRUE(WaitFor([&] { return StateIs(engine, "serving") == 1; })) << engine.log();
  EXPECT_EQ(StateIs(engine, "forwarding"), 0);
  EXPECT_EQ(Get(engine.url(kPrefix + "/graph?" + kQuery)).body, forwarded);
  EXPECT_NE(engine.log().find("serves a graph again"), std::string::npos) << engine.log();
}

// A configured kind is kept: a graph-builder upstream that answers like a policy
// engine is a failed fetch with a clear message, not a switch to forwarding.
TEST(UpstreamChainTest, AConfiguredKindIsKept) {
  ServiceProcess builder("graph-builder", BuilderArgs());
  ServiceProcess middle("policy-engine", EngineArgs(builder.url(kPrefix + "/graph")));
  ServiceProcess strict("policy-engine", EngineArgs(middle.url(kPrefix + "/graph"),
                                                    {"--upstream.cincinnati.kind", "graph-builder"}));
  ASSERT_TRUE(WaitFor([&] {
    return strict.log().find("answers like a policy engine, but upstream.cincinnati.kind is graph-builder") !=
           std::string::npos;
  })) << strict.log();
  EXPECT_EQ(Get(strict.url("/readyz", "status")).status, 503);
  EXPECT_EQ(StateIs(strict, "waiting_for_graph"), 1);
  EXPECT_EQ(Get(strict.url(kPrefix + "/graph?" + kQuery)).status, 500);
  ServiceProcess bad("policy-engine", EngineArgs(middle.url(kPrefix + "/graph"), {"--upstream.cincinnati.kind", "pe"}));
  EXPECT_FALSE(bad.running());
  EXPECT_NE(bad.log().find("upstream kind 'pe': expected auto, graph-builder or policy-engine"), std::string::npos)
      << bad.log();
}

}  // namespace
}  // namespace cincinnati
