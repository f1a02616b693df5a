// `{prefix}/v1/path` and `{prefix}/v1/explain` over real HTTP: `serve` with a cluster
// directory (hotfix customers), a policy engine behind a graph builder (the builder's
// records cross HTTP, clients never see them), a policy engine that forwards, and the
// `path` / `explain` commands against a running service.
#include <gtest/gtest.h>

#include <algorithm>

#include <mutex>

#include <atomic>

#include <functional>
#include <future>

#include "core/graph_records.h"
#include "core/sha256.h"
#include "example_clusters.h"
#include "http_server/http_server.h"
#include "service_util.h"
#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;

const std::string& kAcme = testing::kAcmeCluster;
const std::string& kGlobex = testing::kGlobexCluster;
const fs::path kExample = testing::Examples() / "ocp-4x";

std::vector<std::string> Sources() {
  return {"--releases", (kExample / "releases").string(), "--graph-data", (kExample / "graph-data").string(),
          "--service.pause_secs", "1"};
}

class InsightServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    auto args = Sources();
    args.insert(args.end(), {"--cluster_directory.path", testing::ImportExampleClusters(dir_->path())});
    serve_ = new ServiceProcess("serve", args);
    ASSERT_TRUE(WaitFor([] { return Get(serve_->url("/readyz", "status")).status == 200; })) << serve_->log();
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(serve_->Stop(), 0) << serve_->log();
    delete serve_;
    delete dir_;
  }
  static std::string Url(const std::string& path) { return serve_->url("/api/upgrades_info" + path); }
  static testing::TempDir* dir_;
  static ServiceProcess* serve_;
};
testing::TempDir* InsightServeTest::dir_ = nullptr;
ServiceProcess* InsightServeTest::serve_ = nullptr;

TEST_F(InsightServeTest, APathIsComputedOnTheClustersOwnView) {
  const std::string q = "/v1/path?channel=stable-4.13&from=4.12.3&to=4.13.2&id=";
  auto acme = Get(Url(q + kAcme));
  ASSERT_EQ(acme.status, 200) << acme.body;
  EXPECT_EQ(acme.headers["Content-Type"], "application/json");
  EXPECT_NE(acme.body.find(R"("releases":["4.12.3","4.13.1-hotfix.1","4.13.2"])"), std::string::npos) << acme.body;
  auto globex = Get(Url(q + kGlobex + "&k=5"));
  ASSERT_EQ(globex.status, 200);
  EXPECT_EQ(globex.body.find("hotfix"), std::string::npos) << globex.body;
  EXPECT_NE(globex.body.find(R"("releases":["4.12.3","4.13.0","4.13.2"])"), std::string::npos) << globex.body;
  // Accepting the risk takes the conditional edge, which lists its risk.
  auto risky = Get(Url("/v1/path?channel=stable-4.13&from=4.12.3&to=4.13.2&accept=ExampleIngressRisk"));
  EXPECT_NE(risky.body.find(R"("risks":["ExampleIngressRisk"])"), std::string::npos) << risky.body;
  // A table for people.
  auto table = Get(Url("/v1/path?channel=stable-4.13&from=4.12.3&to=4.13.2"), {"Accept: text/plain"});
  EXPECT_EQ(table.body.rfind("path 1: 2 hops\n", 0), 0u) << table.body;
}

TEST_F(InsightServeTest, ExplanationsNameTheCauseAndClientsNeverSeeTheRecords) {
  auto e = Get(Url("/v1/explain?channel=stable-4.13&version=4.12.3"));
  ASSERT_EQ(e.status, 200) << e.body;
  EXPECT_NE(e.body.find(R"("to":"4.13.1","verdict":"not_offered")"), std::string::npos) << e.body;
  EXPECT_NE(e.body.find(R"("file":"blocked-edges/4.13.1.yaml")"), std::string::npos) << e.body;
  EXPECT_NE(e.body.find(R"("to":"4.13.2","verdict":"conditional")"), std::string::npos) << e.body;
  // A hotfix is no release for a request without its customer's id: not listed, not named.
  EXPECT_EQ(e.body.find("hotfix"), std::string::npos) << e.body;
  auto hidden = Get(Url("/v1/explain?channel=stable-4.13&version=4.12.3&to=4.13.1-hotfix.1"));
  EXPECT_NE(hidden.body.find(R"("kind":"not_in_graph")"), std::string::npos) << hidden.body;
  EXPECT_EQ(hidden.body.find("acme"), std::string::npos) << hidden.body;
  EXPECT_EQ(Get(Url("/v1/explain?channel=stable-4.13&version=9.9.9")).body.find("hotfix"), std::string::npos);
  auto acme = Get(Url("/v1/explain?channel=stable-4.13&version=4.12.3&to=4.13.1-hotfix.1&id=" + kAcme));
  EXPECT_NE(acme.body.find(R"("verdict":"offered")"), std::string::npos) << acme.body;
  for (const std::string channel : {"stable-4.13", "fast-4.13", "candidate-4.12"}) {
    std::string body = Get(Url("/v1/graph?channel=" + channel)).body;
    EXPECT_NE(body.find("\"nodes\":[{"), std::string::npos);
    EXPECT_EQ(body.find("blocked.by"), std::string::npos) << channel;
    EXPECT_EQ(body.find("removed.previous"), std::string::npos) << channel;
  }
}

TEST_F(InsightServeTest, BadQueriesGetTheReferenceErrorKinds) {
  auto missing = Get(Url("/v1/path?channel=stable-4.13&from=4.12.3"));
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(missing.body, R"({"kind":"missing_params","value":"mandatory client parameters missing: to"})");
  auto k = Get(Url("/v1/path?channel=stable-4.13&from=4.12.3&to=4.13.2&k=99"));
  EXPECT_EQ(k.status, 400);
  EXPECT_NE(k.body.find("invalid_params"), std::string::npos) << k.body;
  auto version = Get(Url("/v1/explain?channel=stable-4.13&version=latest"));
  EXPECT_EQ(version.status, 400);
  EXPECT_NE(version.body.find("version 'latest' is not a SemVer version"), std::string::npos) << version.body;
  http::RequestOptions post;
  post.method = "POST";
  EXPECT_EQ(http::Request(Url("/v1/explain?channel=stable-4.13&version=4.12.3"), post).status, 405);
}

TEST_F(InsightServeTest, TheCommandsAskARunningService) {
  const std::string url = Url("");
  auto found = testing::RunCincinnati("path --url " + url + " --channel stable-4.13 --from 4.12.3 --to 4.13.2 -k 2");
  EXPECT_EQ(found.exit_code, 0) << found.out;
  EXPECT_NE(found.out.find("path 2:"), std::string::npos) << found.out;
  auto none = testing::RunCincinnati("path --url " + url + " --channel stable-4.13 --from 4.13.2 --to 4.12.3");
  EXPECT_EQ(none.exit_code, 1) << none.out;
  EXPECT_NE(none.out.find("updates only go forward"), std::string::npos) << none.out;
  auto explain = testing::RunCincinnati("explain --url " + url + " --channel stable-4.13 --version 4.12.3 --json");
  EXPECT_EQ(explain.exit_code, 0) << explain.out;
  EXPECT_EQ(explain.out.rfind(R"({"channel":"stable-4.13","arch":"amd64","version":"4.12.3","edges":[)", 0), 0u)
      << explain.out;
  // The same answer computed locally.
  auto local = testing::RunCincinnati("explain --releases " + (kExample / "releases").string() + " --graph-data " +
                                      (kExample / "graph-data").string() + " --channel stable-4.13 --version 4.12.3 --json");
  EXPECT_EQ(local.out, explain.out);
  // A mistyped channel: one error, the same from every command, remote or local, with
  // the nearest channel and the channels there are; exit 1.
  const std::string local_sources =
      "--releases " + (kExample / "releases").string() + " --graph-data " + (kExample / "graph-data").string();
  for (const std::string& where : {"--url " + url, local_sources}) {
    for (const std::string& command : {std::string("explain --version 4.12.3"), std::string("path --from 4.12.3 --to 4.13.2")}) {
      for (const char* json : {"", " --json"}) {
        auto typo = testing::RunCincinnati(command + " " + where + " --channel stable-4.31" + json);
        EXPECT_EQ(typo.exit_code, 1) << command << where << typo.out;
        EXPECT_EQ(typo.err.rfind("error: unknown channel 'stable-4.31'; did you mean 'stable-4.13'? (channels: ", 0), 0u)
            << command << " " << where << "\n" << typo.err;
        EXPECT_EQ(typo.out, "") << command << " " << where;
      }
    }
    // A version that is no release: one sentence naming the channel's releases, exit 1.
    auto missing = testing::RunCincinnati("explain " + where + " --channel stable-4.13 --version 4.12.99");
    EXPECT_EQ(missing.exit_code, 1) << missing.out;
    EXPECT_EQ(missing.out.rfind("4.12.99 is not a release of channel stable-4.13 (amd64); its releases: 4.12.", 0), 0u)
        << missing.out;
    EXPECT_EQ(std::count(missing.out.begin(), missing.out.end(), '\n'), 1) << missing.out;
  }
  auto render = testing::RunCincinnati("graph render " + local_sources + " --channel stable-4.31");
  EXPECT_EQ(render.err.rfind("error: unknown channel 'stable-4.31'; did you mean 'stable-4.13'? (channels: ", 0), 0u)
      << render.err;
  auto preview = testing::RunCincinnati("rollout preview " + local_sources + " --channel stable-4.31");
  EXPECT_EQ(preview.err.rfind("error: unknown channel 'stable-4.31'; did you mean 'stable-4.13'? (channels: ", 0), 0u)
      << preview.err;
  auto arch = testing::RunCincinnati("path " + local_sources + " --channel stable-4.13 --arch amd46 --from 4.12.3 --to 4.13.2");
  EXPECT_EQ(arch.err.rfind("error: unknown arch 'amd46'; did you mean 'amd64'? (arches: ", 0), 0u) << arch.err;
}

TEST(InsightUpstreamTest, TheBuildersRecordsCrossHttpAndStayOutOfAnswers) {
  ServiceProcess builder("graph-builder", Sources());
  ASSERT_TRUE(builder.running()) << builder.log();
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", builder.url("/graph"),
                                          "--upstream.cincinnati.cache_ttl_secs", "1"});
  ASSERT_TRUE(WaitFor([&] { return Get(engine.url("/readyz", "status")).status == 200; })) << engine.log();
  // The graph builder's graph is the reference's document: no records in it...
  auto graph = Get(builder.url("/graph"));
  ASSERT_EQ(graph.status, 200);
  EXPECT_EQ(graph.body.find("io.openshift.upgrades.graph.blocked.by"), std::string::npos);
  EXPECT_EQ(graph.body.find("io.openshift.upgrades.graph.removed"), std::string::npos);
  // ...they are a document of their own, on the same URL, for that graph's bytes...
  auto records = Get(builder.url("/graph"), {"Accept: application/vnd.cincinnati.graph-records+json"});
  ASSERT_EQ(records.status, 200) << records.body;
  EXPECT_EQ(records.headers["Content-Type"], "application/vnd.cincinnati.graph-records+json");
  EXPECT_EQ(records.headers["Vary"], "Accept, Accept-Encoding");
  auto read = ReadGraphRecordsJson(records.body);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->graph_sha256, Sha256Hex(graph.body));
  EXPECT_NE(records.body.find("blocked-edges/4.13.1.yaml"), std::string::npos) << records.body;
  // ...which the policy engine reads: it explains as `serve` does, and never passes them on.
  // Ready means answers; the records follow the graph, a fetch later.
  const std::string query = "/v1/explain?channel=stable-4.13&version=4.12.3";
  http::Result e;
  EXPECT_TRUE(WaitFor([&] {
    e = Get(engine.url(query));
    return e.status == 200 && e.body.find(R"("file":"blocked-edges/4.13.1.yaml")") != std::string::npos;
  })) << e.status << " " << e.body;
  auto local = testing::RunCincinnati("explain --releases " + (kExample / "releases").string() + " --graph-data " +
                                      (kExample / "graph-data").string() + " --channel stable-4.13 --version 4.12.3 --json");
  EXPECT_EQ(e.body + "\n", local.out);
  auto path = Get(engine.url("/v1/path?channel=stable-4.13&from=4.12.3&to=4.13.2"));
  ASSERT_EQ(path.status, 200) << path.body;
  auto local_path = testing::RunCincinnati("path --releases " + (kExample / "releases").string() + " --graph-data " +
                                           (kExample / "graph-data").string() +
                                           " --channel stable-4.13 --from 4.12.3 --to 4.13.2 --json");
  EXPECT_EQ(path.body + "\n", local_path.out);
  EXPECT_EQ(Get(engine.url("/v1/graph?channel=stable-4.13")).body.find("blocked.by"), std::string::npos);
  // A policy engine that forwards to another one says where to ask.
  ServiceProcess front("policy-engine", {"--upstream.cincinnati.url", engine.url("/graph"),
                                         "--upstream.cincinnati.kind", "policy-engine"});
  ASSERT_TRUE(WaitFor([&] { return Get(front.url("/readyz", "status")).status == 200; })) << front.log();
  auto forwarded = Get(front.url("/v1/path?channel=stable-4.13&from=4.12.3&to=4.13.2"));
  EXPECT_EQ(forwarded.status, 500);
  EXPECT_NE(forwarded.body.find("ask that one"), std::string::npos) << forwarded.body;
}

// A fake graph builder on 127.0.0.1 that serves the example's graph document and
// answers requests for its records as the test says.
class RecordsBuilder {
 public:
  enum Mode { kEmpty, kStale, kMatching, kNone, kHeld };

  explicit RecordsBuilder(const std::function<void(Graph&)>& edit = nullptr) {
    auto built = testing::BuildLocal(kExample / "releases", kExample / "graph-data");
    EXPECT_TRUE(built.ok()) << built.status().message();
    if (built.ok() && edit) edit(*built);
    if (built.ok()) document_ = WriteServedGraphJson(*built, &records_);
    of_another_ = records_;
    of_another_.graph_sha256 = Sha256Hex("the graph after the next refresh");
    http_server::ServerLimits limits;
    limits.threads = 2;
    server_ = std::make_unique<http_server::HttpServer>(limits);
    auto port = server_->Listen("127.0.0.1", 0, [this](const http_server::Request& r) { return Answer(r); });
    EXPECT_TRUE(port.ok()) << port.status().message();
    port_ = port.ok() ? *port : 0;
    server_->Start();
  }
  ~RecordsBuilder() {
    Release();
    server_->Shutdown(std::chrono::milliseconds(2000));
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/graph"; }
  void set_mode(Mode m) { mode_ = m; }
  void Release() { released_.set_value_once(); }
  std::atomic<int> graph_requests{0}, record_requests{0}, records_in_flight{0};

 private:
  struct Latch {  // set once, waited on by held requests
    std::promise<void> promise;
    std::shared_future<void> future = promise.get_future().share();
    std::once_flag once;
    void set_value_once() { std::call_once(once, [&] { promise.set_value(); }); }
  };
  http_server::Response Answer(const http_server::Request& r) {
    const std::string* accept = r.Header("Accept");
    if (!accept || *accept != kGraphRecordsMediaType) {
      ++graph_requests;
      return http_server::Response::Text(200, document_, "application/json");
    }
    ++record_requests;
    switch (mode_.load()) {
      case kEmpty:  // what a graph builder before its first graph used to answer
        return http_server::Response::Text(200, "", "application/json");
      case kNone:
        return http_server::Response::Text(406, R"({"kind":"invalid_content_type","value":"invalid Content-Type requested"})",
                                      "application/json");
      case kHeld:
        ++records_in_flight;
        released_.future.wait_for(std::chrono::seconds(20));
        --records_in_flight;
        [[fallthrough]];
      case kMatching:
        return http_server::Response::Text(200, WriteGraphRecordsJson(records_), std::string(kGraphRecordsMediaType));
      case kStale:
        break;
    }
    return http_server::Response::Text(200, WriteGraphRecordsJson(of_another_), std::string(kGraphRecordsMediaType));
  }

  std::string document_;
  GraphRecords records_, of_another_;
  std::atomic<Mode> mode_{kEmpty};
  Latch released_;
  std::unique_ptr<http_server::HttpServer> server_;
  uint16_t port_ = 0;
};

std::unique_ptr<ServiceProcess> EngineOn(const std::string& upstream) {
  auto engine = std::make_unique<ServiceProcess>(
      "policy-engine", std::vector<std::string>{"--upstream.cincinnati.url", upstream,
                                                "--upstream.cincinnati.cache_ttl_secs", "1"});
  EXPECT_TRUE(WaitFor([&] { return Get(engine->url("/readyz", "status")).status == 200; })) << engine->log();
  return engine;
}

const std::string kExplainQuery = "/v1/explain?channel=stable-4.13&version=4.12.3&to=4.13.1";
const std::string kCause = R"("file":"blocked-edges/4.13.1.yaml")";

// Records that failed to arrive (an empty answer) or are of another graph (the builder
// refreshed between the two requests) leave the graph served and explained with the
// step alone; they are asked for again while the graph stays the same, and taken once
// they match; then no more requests for them.
TEST(InsightUpstreamTest, RecordsMissingOrOfAnotherGraphAreAskedAgainUntilTheyMatch) {
  RecordsBuilder builder;
  auto engine = EngineOn(builder.url());
  auto e = Get(engine->url(kExplainQuery));
  ASSERT_EQ(e.status, 200) << e.body;
  EXPECT_NE(e.body.find(R"("verdict":"not_offered")"), std::string::npos) << e.body;
  EXPECT_EQ(e.body.find(kCause), std::string::npos) << e.body;
  ASSERT_TRUE(WaitFor([&] { return builder.record_requests >= 2; })) << engine->log();
  builder.set_mode(RecordsBuilder::kStale);
  const int stale_from = builder.record_requests;
  ASSERT_TRUE(WaitFor([&] { return builder.record_requests > stale_from; })) << engine->log();
  EXPECT_EQ(Get(engine->url(kExplainQuery)).body.find(kCause), std::string::npos);
  builder.set_mode(RecordsBuilder::kMatching);
  ASSERT_TRUE(WaitFor([&] { return Get(engine->url(kExplainQuery)).body.find(kCause) != std::string::npos; }))
      << engine->log();
  const int asked = builder.record_requests;
  const int fetched = builder.graph_requests;
  ASSERT_TRUE(WaitFor([&] { return builder.graph_requests >= fetched + 2; })) << engine->log();
  EXPECT_EQ(builder.record_requests, asked);
  EXPECT_EQ(Get(engine->url("/v1/graph?channel=stable-4.13")).body.find("blocked.by"), std::string::npos);
  EXPECT_EQ(engine->Stop(), 0) << engine->log();
  EXPECT_NE(engine->log().find("of another graph"), std::string::npos) << engine->log();
}

// A graph builder without records (the reference's answers their media type with 406):
// asked once for this graph, said once, and explanations name the step alone.
TEST(InsightUpstreamTest, ABuilderWithoutRecordsIsAskedOncePerGraph) {
  RecordsBuilder builder;
  builder.set_mode(RecordsBuilder::kNone);
  auto engine = EngineOn(builder.url());
  const int before = builder.graph_requests;
  ASSERT_TRUE(WaitFor([&] { return builder.graph_requests >= before + 2; })) << engine->log();
  EXPECT_EQ(builder.record_requests, 1);
  auto e = Get(engine->url(kExplainQuery));
  EXPECT_NE(e.body.find(R"("verdict":"not_offered")"), std::string::npos) << e.body;
  EXPECT_EQ(e.body.find(kCause), std::string::npos) << e.body;
  EXPECT_EQ(engine->Stop(), 0);
  EXPECT_NE(engine->log().find("keeps no records of removed edges"), std::string::npos) << engine->log();
}

// The graph's answers never wait on the records: the engine is ready and answers while
// the request for them is still held by the builder.
TEST(InsightUpstreamTest, ASlowRecordsAnswerNeverHoldsTheGraphBack) {
  RecordsBuilder builder;
  builder.set_mode(RecordsBuilder::kHeld);
  auto engine = EngineOn(builder.url());
  // The engine asks for the records after it serves the graph: wait until the builder
  // holds that request, then the graph must still be answered.
  ASSERT_TRUE(WaitFor([&] { return builder.records_in_flight == 1; })) << engine->log();
  EXPECT_EQ(Get(engine->url("/v1/graph?channel=stable-4.13")).status, 200);
  EXPECT_EQ(builder.records_in_flight, 1);  // still held
  builder.Release();
  ASSERT_TRUE(WaitFor([&] { return Get(engine->url(kExplainQuery)).body.find(kCause) != std::string::npos; }))
      << engine->log();
  EXPECT_EQ(engine->Stop(), 0) << engine->log();
}

// node-remove in a policy engine's chain drops the release but writes no record into
// the answers it serves.
TEST(InsightUpstreamTest, NodeRemoveInAPolicyChainWritesNoRecordIntoAnswers) {
  testing::TempDir dir;
  RecordsBuilder builder([](Graph& g) {
    auto removed = g.Find("4.13.0+amd64");
    ASSERT_TRUE(removed);
    g.mutable_metadata(*removed)["io.openshift.upgrades.graph.release.remove"] = "true";
  });
  builder.set_mode(RecordsBuilder::kNone);
  testing::WriteFile(dir / "pe.toml", "[[policy]]\nname = \"cincinnati-graph-fetch\"\nupstream = \"" + builder.url() +
                                          "\"\n[[policy]]\nname = \"node-remove\"\n[[policy]]\nname = \"channel-filter\"\n"
                                          "[[policy]]\nname = \"arch-filter\"\n");
  ServiceProcess engine("policy-engine", {"-c", (dir / "pe.toml").string()});
  ASSERT_TRUE(WaitFor([&] { return Get(engine.url("/readyz", "status")).status == 200; })) << engine.log();
  auto answer = Get(engine.url("/v1/graph?channel=stable-4.13"));
  ASSERT_EQ(answer.status, 200) << answer.body;
  EXPECT_NE(answer.body.find(R"("version":"4.12.3")"), std::string::npos) << answer.body;
  EXPECT_EQ(answer.body.find(R"("version":"4.13.0")"), std::string::npos) << answer.body;  // removed
  EXPECT_EQ(answer.body.find("removed.next"), std::string::npos) << answer.body;
}

}  // namespace
}  // namespace cincinnati
