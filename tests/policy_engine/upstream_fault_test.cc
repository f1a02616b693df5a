// Fault injection on the policy engine's upstream (a graph builder or another policy
// engine), through a real HTTP server on 127.0.0.1 whose answers the test controls:
// down, slow, invalid JSON, out-of-range edge indices, versions that are not SemVer,
// conditional edges to missing nodes. For each, the policy engine keeps serving the
// last good graph, stays ready, counts the failure and logs its cause once.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "core/graph_json.h"
#include "http_server/http_server.h"
#include "service_util.h"

namespace cincinnati {
namespace {

using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;
using testing::Count;
using testing::MetricValue;

// Serves GET /graph with whatever body is set, optionally after a delay.
class FakeUpstream {
 public:
  FakeUpstream() { Start(0); }
  ~FakeUpstream() { Stop(); }
  void Start(uint16_t port) {
    server_ = std::make_unique<http_server::HttpServer>(http_server::ServerLimits{.threads = 2});
    port_ = *server_->ListenAsync("127.0.0.1", port, [this](const http_server::Request&, std::function<void(http_server::Response)> done) {
      std::string body;
      uint64_t generation = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        body = body_;
        generation = generation_;
      }
      ++served_;
      int delay = delay_ms_.load();
      if (delay == 0) {
        http_server::Response r = http_server::Response::Text(200, body, "application/json");
        if (generation != 0) r.headers["Cincinnati-Graph-Generation"] = std::to_string(generation);
        return done(std::move(r));
      }
      std::lock_guard<std::mutex> lock(mu_);
      answering_.emplace_back([done, body, delay] {
        std::this_thread::sleep_for(std::chrono::milliseconds(delay));  // the slow upstream itself
        done(http_server::Response::Text(200, body, "application/json"));
      });
    });
    server_->Start();
  }
  void Stop() {
    // Slow answers end first: a responder holds its session, whose end touches the server.
    std::vector<std::jthread> answering;
    {
      std::lock_guard<std::mutex> lock(mu_);
      answering.swap(answering_);
    }
    answering.clear();
    if (server_) server_->Shutdown(std::chrono::seconds(5));
    server_.reset();
  }
  void Set(std::string body, uint64_t generation = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    body_ = std::move(body);
    generation_ = generation;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/graph"; }
  uint16_t port() const { return port_; }
  std::atomic<int> delay_ms_{0};
  std::atomic<int> served_{0};

 private:
  std::mutex mu_;
  std::string body_;
  uint64_t generation_ = 0;
  std::vector<std::jthread> answering_;  // the slow answers' threads (under mu_)
  std::unique_ptr<http_server::HttpServer> server_;
  uint16_t port_ = 0;
};

std::string GoodGraph() {
  const char* channels = "io.openshift.upgrades.graph.release.arch\":\"amd64\",\"io.openshift.upgrades.graph.release.channels";
  return std::string(R"({"nodes":[)") +
         R"({"version":"4.14.0+amd64","payload":"quay.io/r@sha256:0","metadata":{")" + channels + R"(":"stable-4.14"}},)" +
         R"({"version":"4.14.1+amd64","payload":"quay.io/r@sha256:1","metadata":{")" + channels + R"(":"stable-4.14"}}],)" +
         R"("edges":[[0,1]],"conditionalEdges":[]})";
}

// Graph-builder replicas behind one address that have not all caught up: one serves the
// newer graph (a brake decided a second ago), another still the older, numbered lower.
// The policy engine keeps the newer; a yet newer one is taken.
TEST(UpstreamFaultTest, AnOlderGenerationFromAReplicaBehindIsNotTaken) {
  const uint64_t now_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  std::string newer = GoodGraph();
  newer.replace(newer.find("\"edges\":[[0,1]]"), 15, "\"edges\":[]");
  FakeUpstream upstream;
  upstream.Set(GoodGraph(), now_ms);
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", upstream.url(), "--upstream.cincinnati.cache_ttl_secs", "1"});
  const std::string view = engine.url("/graph?channel=stable-4.14&version=4.14.0");
  ASSERT_TRUE(WaitFor([&] { return Get(view).body.find("4.14.1") != std::string::npos && Get(view).body.find("[[") != std::string::npos; }))
      << engine.log();
  upstream.Set(newer, now_ms + 1000);
  ASSERT_TRUE(WaitFor([&] { return Get(view).body.find("[[") == std::string::npos; })) << engine.log();
  upstream.Set(GoodGraph(), now_ms);  // the replica behind
  ASSERT_TRUE(WaitFor([&] { return MetricValue(engine, "cincinnati_pe_http_upstream_older_generations_total") >= 2; },
                      std::chrono::seconds(30)))
      << engine.log();
  EXPECT_EQ(Get(view).body.find("[["), std::string::npos) << "the older graph was not taken";
  upstream.Set(GoodGraph(), now_ms + 2000);  // the same bytes as before, numbered anew: newer
  EXPECT_TRUE(WaitFor([&] { return Get(view).body.find("[[") != std::string::npos; })) << engine.log();
}

TEST(UpstreamFaultTest, EveryFaultKeepsTheLastGoodGraph) {
  FakeUpstream upstream;
  upstream.Set(GoodGraph());
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", upstream.url(), "--upstream.cincinnati.cache_ttl_secs",
                                          "1", "--upstream.cincinnati.timeout_secs", "1"});
  const std::string view = engine.url("/graph?channel=stable-4.14");
  ASSERT_TRUE(WaitFor([&] { return Get(view).status == 200; })) << engine.log();
  const std::string good = Get(view).body;
  ASSERT_NE(good.find("4.14.1"), std::string::npos);

  struct Fault {
    const char* name;
    std::function<void()> inject;
    std::string logged;  // the cause, as the log names it
  };
  std::string out_of_range = GoodGraph();
  out_of_range.replace(out_of_range.find("[[0,1]]"), 7, "[[0,1],[1,7]]");
  std::string not_semver = GoodGraph();
  not_semver.replace(not_semver.find("\"4.14.1+amd64\""), 14, "\"4.14+amd64\"");
  std::string dangling = GoodGraph();
  dangling.replace(dangling.find("\"conditionalEdges\":[]"), 21,
                   R"("conditionalEdges":[{"edges":[{"from":"4.14.0+amd64","to":"4.15.0+amd64"}],"risks":[{"url":"u","name":"R","message":"m","matchingRules":[{"type":"Always"}]}]}])");
  // Internal keys a policy step decodes, with values it cannot decode: the graph is
  // refused before any request meets them.
  auto with_key = [](const std::string& key, const std::string& value) {
    std::string g = GoodGraph();
    const std::string at = R"({"version":"4.14.1+amd64","payload":"quay.io/r@sha256:1","metadata":{)";
    g.insert(g.find(at) + at.size(), "\"" + key + "\":\"" + value + "\",");
    return g;
  };
  std::string bad_start = with_key("io.openshift.upgrades.graph.phased.start", "stable-4.14=99999999999999999999");
  std::string bad_rules = with_key("io.openshift.upgrades.graph.phased.rollouts", "stable-4.14:minor=soon");
  std::string bad_hotfix = with_key("io.openshift.upgrades.graph.hotfix.rules", "no|rule");
  std::vector<Fault> faults = {
      {"undecodable phased start", [&] { upstream.Set(bad_start); },
       "node 1 ('4.14.1+amd64'): io.openshift.upgrades.graph.phased.start"},
      {"undecodable phased rules", [&] { upstream.Set(bad_rules); },
       "node 1 ('4.14.1+amd64'): io.openshift.upgrades.graph.phased.rollouts"},
      {"undecodable hotfix rules", [&] { upstream.Set(bad_hotfix); },
       "node 1 ('4.14.1+amd64'): io.openshift.upgrades.graph.hotfix.rules"},
      {"invalid JSON", [&] { upstream.Set("{\"nodes\": [ truncated"); }, "invalid JSON: The JSON document has an improper structure"},
      {"out-of-range edge", [&] { upstream.Set(out_of_range); }, "edges[1]: [1, 7] is out of range (graph has 2 nodes)"},
      {"not SemVer", [&] { upstream.Set(not_semver); }, "node 1 ('4.14+amd64'): not a SemVer version"},
      {"dangling conditional edge", [&] { upstream.Set(dangling); }, "'4.15.0+amd64' is not a node"},
      {"slow", [&] { upstream.delay_ms_ = 3000; }, "Operation timed out after"},
      {"down", [&] { upstream.Stop(); }, "Couldn't connect to server"},
  };
  for (const Fault& fault : faults) {
    SCOPED_TRACE(fault.name);
    double before = MetricValue(engine, "cincinnati_pe_http_upstream_errors_total");
    fault.inject();
    // Three failed fetches in a row...
    ASSERT_TRUE(WaitFor([&] { return MetricValue(engine, "cincinnati_pe_http_upstream_errors_total") >= before + 3; },
                        std::chrono::seconds(30)))
        << engine.log();
    // ...and the clients never noticed: same answer, still ready.
    EXPECT_EQ(Get(view).body, good);
    EXPECT_EQ(Get(engine.url("/readyz", "status")).status, 200);
    // The cause is logged, once.
    std::string log = engine.log();
    EXPECT_EQ(Count(log, fault.logged), 1u) << log;
    // Recovery, so the next fault starts from a good upstream.
    if (std::string(fault.name) == "down") upstream.Start(upstream.port());
    upstream.delay_ms_ = 0;
    upstream.Set(GoodGraph());
    size_t recoveries = Count(engine.log(), "upstream fetch succeeded again");
    ASSERT_TRUE(WaitFor([&] { return Count(engine.log(), "upstream fetch succeeded again") > recoveries; },
                        std::chrono::seconds(30))) << engine.log();
  }
  // A genuinely new graph is still taken once the upstream is healthy.
  std::string next = GoodGraph();
  next.replace(next.find("\"4.14.1+amd64\""), 14, "\"4.14.2+amd64\"");
  upstream.Set(next);
  ASSERT_TRUE(WaitFor([&] { return Get(view).body.find("4.14.2") != std::string::npos; })) << engine.log();
  EXPECT_EQ(engine.Stop(), 0);
}

}  // namespace
}  // namespace cincinnati
