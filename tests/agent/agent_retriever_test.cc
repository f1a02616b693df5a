// The agent's available-updates worker (when it asks, what it reports) over real HTTP: our `serve`
// on the bundled 4.x example, and a scripted upstream on 127.0.0.1 whose answers the
// test switches (500, invalid JSON, a graph without the current version, down).
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "agent/update_retriever.h"
#include "http_server/http_server.h"
#include "service_util.h"

namespace cincinnati::agent {
namespace {

using namespace std::chrono_literals;
using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;

constexpr char kClusterId[] = "d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a";

// An update service whose answer the test sets; it records the last request.
class ScriptedUpstream {
 public:
  ScriptedUpstream() {
    http_server::ServerLimits limits;
    limits.threads = 1;
    server_ = std::make_unique<http_server::HttpServer>(limits);
    port_ = *server_->Listen("127.0.0.1", 0, [this](const http_server::Request& r) {
      std::lock_guard lock(mu_);
      ++requests_;
      last_target_ = r.target;
      const std::string* agent = r.Header("User-Agent");
      const std::string* accept = r.Header("Accept");
      last_user_agent_ = agent ? *agent : "";
      last_accept_ = accept ? *accept : "";
      return http_server::Response::Text(status_, body_, "application/json");
    });
    server_->Start();
  }
  ~ScriptedUpstream() { Down(); }
  void Answer(int status, std::string body) {
    std::lock_guard lock(mu_);
    status_ = status, body_ = std::move(body);
  }
  void Down() {
    if (server_) server_->Shutdown(1s);
    server_.reset();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/api/upgrades_info/v1/graph"; }
  int requests() { std::lock_guard lock(mu_); return requests_; }
  std::string last_target() { std::lock_guard lock(mu_); return last_target_; }
  std::string last_user_agent() { std::lock_guard lock(mu_); return last_user_agent_; }
  std::string last_accept() { std::lock_guard lock(mu_); return last_accept_; }

 private:
  std::unique_ptr<http_server::HttpServer> server_;
  int port_ = 0;
  std::mutex mu_;
  int status_ = 200, requests_ = 0;
  std::string body_, last_target_, last_user_agent_, last_accept_;
};

constexpr char kGraph[] = R"({"version":1,"nodes":[
  {"version":"4.12.3","payload":"r@sha256:3","metadata":{"io.openshift.upgrades.graph.release.channels":"stable-4.13"}},
  {"version":"4.12.4","payload":"r@sha256:4","metadata":{}},
  {"version":"4.13.2","payload":"r@sha256:132","metadata":{"url":"https://example.com/4.13.2"}}],
  "edges":[[0,1]],
  "conditionalEdges":[{"edges":[{"from":"4.12.3","to":"4.13.2"}],
    "risks":[{"url":"https://example.com/risk","name":"IngressRisk","message":"Ingress may drop connections.",
              "matchingRules":[{"type":"PromQL","promql":{"promql":"ingress_risk"}}]}]}]})";

struct RetrieverFixture : ::testing::Test {
  env::ManualClock clock{std::chrono::system_clock::time_point{} + 480000h};
  std::atomic<int> exposed{0};  // the PromQL answer: 1 exposed, 0 not, -1 error
  ScriptedUpstream upstream;
  HttpGraphFetcher fetcher{{}, 10s};
  UpdateRetriever retriever{fetcher,
                            [this](const std::vector<MatchingRule>&) -> Result<bool> {
                              if (exposed < 0) return Status::Internal("prometheus is unreachable");
                              return exposed == 1;
                            },
                            clock};
  GraphRequestInputs inputs{upstream.url(), kClusterId, "amd64", "4.12.3", "stable-4.13"};

  void SetUp() override { upstream.Answer(200, kGraph); }
};

std::vector<std::string> Versions(const std::vector<Release>& releases) {
  std::vector<std::string> out;
  for (const auto& r : releases) out.push_back(r.version);
  return out;
}

TEST_F(RetrieverFixture, ListsUpdatesAndFollowsTheRisk) {
  exposed = 1;
  RetrievedUpdates got = retriever.Run(inputs);
  EXPECT_TRUE(got.fetched);
  EXPECT_EQ(got.retrieved.status, "True");
  EXPECT_EQ(got.retrieved.reason, "");
  EXPECT_EQ(Versions(got.available), (std::vector<std::string>{"4.12.4"}));
  ASSERT_EQ(got.conditional.size(), 1u);
  const Condition& recommended = got.conditional[0].conditions.at(0);
  EXPECT_EQ(recommended.type, "Recommended");
  EXPECT_EQ(recommended.status, "False");
  EXPECT_EQ(recommended.reason, "IngressRisk");
  EXPECT_EQ(recommended.message, "Ingress may drop connections. https://example.com/risk");
  const std::string exposed_since = recommended.last_transition_time;

  // The request the CVO makes.
  EXPECT_EQ(upstream.last_target(), std::string("/api/upgrades_info/v1/graph?arch=amd64&channel=stable-4.13&id=") +
                                        kClusterId + "&version=4.12.3");
  EXPECT_EQ(upstream.last_accept(), "application/json");
  EXPECT_EQ(upstream.last_user_agent().rfind("ClusterVersionOperator/", 0), 0u);

  // Not exposed any more: no fetch inside the poll interval, the risk is re-evaluated,
  // 4.13.2 joins the available updates (newest first).
  clock.Advance(1min);
  exposed = 0;
  got = retriever.Run(inputs);
  EXPECT_FALSE(got.fetched);
  EXPECT_EQ(upstream.requests(), 1);
  EXPECT_EQ(Versions(got.available), (std::vector<std::string>{"4.13.2", "4.12.4"}));
  EXPECT_EQ(got.conditional[0].conditions[0].status, "True");
  EXPECT_EQ(got.conditional[0].conditions[0].reason, "NotExposedToRisks");
  EXPECT_NE(got.conditional[0].conditions[0].last_transition_time, exposed_since);

  // An evaluation failure: Unknown, not available, and the loop should come back soon.
  clock.Advance(1min);
  exposed = -1;
  got = retriever.Run(inputs);
  EXPECT_EQ(got.conditional[0].conditions[0].status, "Unknown");
  EXPECT_EQ(got.conditional[0].conditions[0].reason, "EvaluationFailed");
  EXPECT_TRUE(got.risks_pending);
  EXPECT_EQ(Versions(got.available), (std::vector<std::string>{"4.12.4"}));
  const std::string unknown_since = got.conditional[0].conditions[0].last_transition_time;
  clock.Advance(10s);
  got = retriever.Run(inputs);
  EXPECT_EQ(got.conditional[0].conditions[0].last_transition_time, unknown_since) << "unchanged status keeps its time";

  // After the poll interval, a fetch.
  clock.Advance(3min);
  got = retriever.Run(inputs);
  EXPECT_TRUE(got.fetched);
  EXPECT_EQ(upstream.requests(), 2);
}

TEST_F(RetrieverFixture, TransientFailuresKeepTheListsAndSayWhy) {
  exposed = 0;
  ASSERT_EQ(retriever.Run(inputs).available.size(), 2u);

  struct Case {
    int status;
    std::string body, reason, message;
  };
  std::vector<Case> cases = {
      {500, "oops", "ResponseFailed", "Unable to retrieve available updates: unexpected HTTP status: 500 Internal Server Error"},
      {200, "{not json", "ResponseInvalid", "Unable to retrieve available updates: invalid JSON"},
      {200, R"({"nodes":[{"version":"4.12.3","payload":"a"}],"edges":[[0,7]]})", "ResponseInvalid",
       "Unable to retrieve available updates: edges[0][1]: node index 7 is out of range"},
  };
  for (const auto& c : cases) {
    upstream.Answer(c.status, c.body);
    clock.Advance(4min);
    RetrievedUpdates got = retriever.Run(inputs);
    EXPECT_TRUE(got.fetched);
    EXPECT_EQ(got.retrieved.status, "False");
    EXPECT_EQ(got.retrieved.reason, c.reason);
    EXPECT_EQ(got.retrieved.message.rfind(c.message, 0), 0u) << got.retrieved.message;
    EXPECT_EQ(Versions(got.available), (std::vector<std::string>{"4.13.2", "4.12.4"})) << "kept while " << c.reason;
  }
  // The version is no longer in the channel: not transient, the lists go.
  upstream.Answer(200, R"({"nodes":[{"version":"4.11.0","payload":"a"}],"edges":[]})");
  clock.Advance(4min);
  RetrievedUpdates got = retriever.Run(inputs);
  EXPECT_EQ(got.retrieved.reason, "VersionNotFound");
  EXPECT_EQ(got.retrieved.message,
            "Unable to retrieve available updates: currently reconciling cluster version 4.12.3 not found in the "
            "\"stable-4.13\" channel");
  EXPECT_TRUE(got.available.empty());

  // Back to a good answer, then the upstream goes away: RemoteFailed, lists kept.
  upstream.Answer(200, kGraph);
  clock.Advance(4min);
  ASSERT_EQ(retriever.Run(inputs).retrieved.status, "True");
  upstream.Down();
  clock.Advance(4min);
  got = retriever.Run(inputs);
  EXPECT_EQ(got.retrieved.reason, "RemoteFailed");
  EXPECT_EQ(got.retrieved.message.rfind("Unable to retrieve available updates: ", 0), 0u);
  EXPECT_EQ(got.available.size(), 2u);
  // A day without success: the lists are dropped at the next failure.
  clock.Advance(25h);
  got = retriever.Run(inputs);
  EXPECT_EQ(got.retrieved.reason, "RemoteFailed");
  EXPECT_TRUE(got.available.empty());
}

TEST_F(RetrieverFixture, AChannelChangeFetchesAtOnceAndAFailureClears) {
  exposed = 0;
  ASSERT_EQ(retriever.Run(inputs).retrieved.status, "True");
  clock.Advance(5s);
  inputs.channel = "fast-4.13";
  upstream.Answer(500, "");
  RetrievedUpdates got = retriever.Run(inputs);
  EXPECT_TRUE(got.fetched);
  EXPECT_EQ(upstream.requests(), 2);
  EXPECT_NE(upstream.last_target().find("channel=fast-4.13"), std::string::npos);
  EXPECT_EQ(got.retrieved.reason, "ResponseFailed");
  EXPECT_TRUE(got.available.empty());
  EXPECT_TRUE(got.conditional.empty());
}

TEST_F(RetrieverFixture, LocalChecksNeedNoNetwork) {
  struct Case {
    void (*edit)(GraphRequestInputs&);
    std::string reason;
  };
  std::vector<Case> cases = {
      {[](GraphRequestInputs& in) { in.upstream = ""; }, "NoUpstream"},
      {[](GraphRequestInputs& in) { in.upstream = "http://bad\x7fhost/"; }, "InvalidURI"},
      {[](GraphRequestInputs& in) { in.cluster_id = "cluster-1"; }, "InvalidID"},
      {[](GraphRequestInputs& in) { in.arch = ""; }, "NoArchitecture"},
      {[](GraphRequestInputs& in) { in.version = ""; }, "NoCurrentVersion"},
      {[](GraphRequestInputs& in) { in.channel = ""; }, "NoChannel"},
      {[](GraphRequestInputs& in) { in.version = "4.12"; }, "InvalidCurrentVersion"},
  };
  for (const auto& c : cases) {
    GraphRequestInputs in = inputs;
    c.edit(in);
    RetrievedUpdates got = retriever.Run(in);
    EXPECT_EQ(got.retrieved.status, "False");
    EXPECT_EQ(got.retrieved.reason, c.reason);
    EXPECT_EQ(got.retrieved.message.find("Unable to retrieve"), std::string::npos) << got.retrieved.message;
    clock.Advance(1s);
  }
  EXPECT_EQ(upstream.requests(), 0);

  // The upstream's own query cannot be read: the request cannot be built (InvalidRequest,
  // a client error, so it reads as the fetch failures do).
  GraphRequestInputs in = inputs;
  in.upstream = upstream.url() + "?x=%zz";
  RetrievedUpdates got = retriever.Run(in);
  EXPECT_EQ(got.retrieved.reason, "InvalidRequest");
  EXPECT_EQ(got.retrieved.message.rfind("Unable to retrieve available updates: invalid query in the update service URL", 0), 0u)
      << got.retrieved.message;
  EXPECT_EQ(upstream.requests(), 0);
}

TEST(RetrieverServeTest, OurServeOffersWhatItsGraphSays) {
  const auto example = testing::Examples() / "ocp-4x";
  ServiceProcess serve("serve", {"--releases", (example / "releases").string(), "--graph-data",
                                 (example / "graph-data").string()});
  ASSERT_TRUE(serve.running()) << serve.log();
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readyz", "status")).status == 200; })) << serve.log();
  HttpGraphFetcher fetcher({}, 10s);
  bool exposed = true;
  std::vector<std::string> queries;
  UpdateRetriever retriever(
      fetcher,
      [&](const std::vector<MatchingRule>& rules) -> Result<bool> {
        for (const auto& r : rules) queries.push_back(r.promql.value_or(""));
        return exposed;
      },
      env::RealClock());
  GraphRequestInputs in{serve.url("/api/upgrades_info/graph"), kClusterId, "amd64", "4.12.3", "stable-4.13"};
  RetrievedUpdates got = retriever.Run(in);
  ASSERT_EQ(got.retrieved.status, "True") << got.retrieved.message;
  // 4.12.3 -> 4.13.1 is blocked; 4.13.2 carries ExampleIngressRisk; the hotfix is for
  // another customer.
  EXPECT_EQ(Versions(got.available), (std::vector<std::string>{"4.13.0", "4.12.4"}));
  ASSERT_EQ(got.conditional.size(), 1u);
  EXPECT_EQ(got.conditional[0].release.version, "4.13.2");
  EXPECT_EQ(got.conditional[0].conditions[0].reason, "ExampleIngressRisk");
  ASSERT_FALSE(queries.empty());
  EXPECT_NE(queries[0].find("ingress_controller_aws_nlb_active"), std::string::npos);
  ASSERT_TRUE(got.current.has_value());
  EXPECT_NE(std::find(got.current->channels.begin(), got.current->channels.end(), "stable-4.13"), got.current->channels.end());

  in.version = "4.99.0";
  got = retriever.Run(in);
  EXPECT_EQ(got.retrieved.reason, "VersionNotFound");
}

}  // namespace
}  // namespace cincinnati::agent
