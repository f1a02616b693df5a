// `{prefix}/v1/path` and `{prefix}/v1/explain` over real HTTP: `serve` with a cluster
// directory (hotfix customers), a policy engine behind a graph builder (the builder's
// records cross HTTP, clients never see them), a policy engine that forwards, and the
// `path` / `explain` commands against a running service.
#include <gtest/gtest.h>

#include "core/graph_records.h"
#include "core/sha256.h"
#include "directory/cluster_database.h"
#include "server/http_server.h"
#include "service_util.h"
#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;

const std::string kAcme = "0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60";    // customer acme: sees the hotfix
const std::string kGlobex = "7c9e6679-7425-40de-944b-e07fc1f90ae7";  // does not
const fs::path kExample = testing::Examples() / "ocp-4x";

std::string ImportClusters(const fs::path& dir) {
  std::string db = (dir / "clusters.db").string();
  auto opened = directory::ClusterDatabase::Open(db, true);
  EXPECT_TRUE(opened.ok());
  auto records = directory::ParseClusterCsv(testing::ReadFile(kExample / "clusters.csv"));
  EXPECT_TRUE(records.ok());
  EXPECT_TRUE((*opened)->Import(*records, true).ok());
  return db;
}

std::vector<std::string> Sources() {
  return {"--releases", (kExample / "releases").string(), "--graph-data", (kExample / "graph-data").string(),
          "--service.pause_secs", "1"};
}

class InsightServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    auto args = Sources();
    args.insert(args.end(), {"--cluster_directory.path", ImportClusters(dir_->path())});
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
  EXPECT_NE(e.body.find(R"("kind":"hotfix")"), std::string::npos) << e.body;
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
  EXPECT_EQ(none.exit_code, 2) << none.out;
  EXPECT_NE(none.out.find("updates only go forward"), std::string::npos) << none.out;
  auto explain = testing::RunCincinnati("explain --url " + url + " --channel stable-4.13 --version 4.12.3 --json");
  EXPECT_EQ(explain.exit_code, 0) << explain.out;
  EXPECT_EQ(explain.out.rfind(R"({"channel":"stable-4.13","arch":"amd64","version":"4.12.3","edges":[)", 0), 0u)
      << explain.out;
  // The same answer computed locally.
  auto local = testing::RunCincinnati("explain --releases " + (kExample / "releases").string() + " --graph-data " +
                                      (kExample / "graph-data").string() + " --channel stable-4.13 --version 4.12.3 --json");
  EXPECT_EQ(local.out, explain.out);
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
  const std::string query = "/v1/explain?channel=stable-4.13&version=4.12.3";
  auto e = Get(engine.url(query));
  ASSERT_EQ(e.status, 200) << e.body;
  EXPECT_NE(e.body.find(R"("file":"blocked-edges/4.13.1.yaml")"), std::string::npos) << e.body;
  auto local = testing::RunCincinnati("explain --releases " + (kExample / "releases").string() + " --graph-data " +
                                      (kExample / "graph-data").string() + " --channel stable-4.13 --version 4.12.3 --json");
  EXPECT_EQ(e.body + "\n", local.out);
  auto path = Get(engine.url("/v1/path?channel=stable-4.13&from=4.12.3&to=4.13.2"));
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

// A graph builder that keeps no records (the reference's answers their media type with
// 406), or whose records are of another graph for a while (it refreshed between the two
// requests): the policy engine serves the graph at once and explains with the step
// alone; it asks again while the records do not match, takes them once they do, and
// asks a graph builder without records once per graph, not at every fetch.
TEST(InsightUpstreamTest, RecordsMissingOrOfAnotherGraphNeverHoldTheGraphBack) {
  auto built = testing::BuildLocal(kExample / "releases", kExample / "graph-data");
  ASSERT_TRUE(built.ok()) << built.status().message();
  GraphRecords records;
  const std::string document = WriteServedGraphJson(*built, &records);
  GraphRecords of_another = records;
  of_another.graph_sha256 = Sha256Hex("the graph after the next refresh");
  enum Mode { kStale, kMatching, kNone };
  std::atomic<int> mode{kStale}, graph_requests{0}, record_requests{0};
  server::ServerLimits limits;
  limits.threads = 2;
  server::HttpServer builder(limits);
  auto port = builder.Listen("127.0.0.1", 0, [&](const server::Request& r) {
    const std::string* accept = r.Header("Accept");
    if (!accept || *accept != kGraphRecordsMediaType) {
      ++graph_requests;
      return server::Response::Text(200, document, "application/json");
    }
    ++record_requests;
    if (mode == kNone) {
      return server::Response::Text(406, R"({"kind":"invalid_content_type","value":"invalid Content-Type requested"})",
                                    "application/json");
    }
    return server::Response::Text(200, WriteGraphRecordsJson(mode == kStale ? of_another : records),
                                  std::string(kGraphRecordsMediaType));
  });
  ASSERT_TRUE(port.ok()) << port.status().message();
  builder.Start();
  const std::string upstream = "http://127.0.0.1:" + std::to_string(*port) + "/graph";
  const std::string query = "/v1/explain?channel=stable-4.13&version=4.12.3&to=4.13.1";
  const std::string cause = R"("file":"blocked-edges/4.13.1.yaml")";

  auto engine = std::make_unique<ServiceProcess>(
      "policy-engine", std::vector<std::string>{"--upstream.cincinnati.url", upstream,
                                                "--upstream.cincinnati.cache_ttl_secs", "1"});
  ASSERT_TRUE(WaitFor([&] { return Get(engine->url("/readyz", "status")).status == 200; })) << engine->log();
  auto e = Get(engine->url(query));
  ASSERT_EQ(e.status, 200) << e.body;
  EXPECT_NE(e.body.find(R"("verdict":"not_offered")"), std::string::npos) << e.body;
  EXPECT_EQ(e.body.find(cause), std::string::npos) << e.body;
  // Asked again at the next fetches of the same graph, and taken once they match.
  ASSERT_TRUE(WaitFor([&] { return record_requests >= 3; })) << engine->log();
  mode = kMatching;
  ASSERT_TRUE(WaitFor([&] { return Get(engine->url(query)).body.find(cause) != std::string::npos; })) << engine->log();
  const int asked = record_requests;
  const int fetched = graph_requests;
  ASSERT_TRUE(WaitFor([&] { return graph_requests >= fetched + 2; })) << engine->log();
  EXPECT_EQ(record_requests, asked);
  EXPECT_EQ(Get(engine->url("/v1/graph?channel=stable-4.13")).body.find("blocked.by"), std::string::npos);
  EXPECT_EQ(engine->Stop(), 0) << engine->log();

  // A graph builder without records: asked once for this graph, and said once.
  mode = kNone;
  record_requests = 0;
  engine = std::make_unique<ServiceProcess>(
      "policy-engine", std::vector<std::string>{"--upstream.cincinnati.url", upstream,
                                                "--upstream.cincinnati.cache_ttl_secs", "1"});
  ASSERT_TRUE(WaitFor([&] { return Get(engine->url("/readyz", "status")).status == 200; })) << engine->log();
  const int before = graph_requests;
  ASSERT_TRUE(WaitFor([&] { return graph_requests >= before + 2; })) << engine->log();
  EXPECT_EQ(record_requests, 1);
  e = Get(engine->url(query));
  EXPECT_NE(e.body.find(R"("verdict":"not_offered")"), std::string::npos) << e.body;
  EXPECT_EQ(e.body.find(cause), std::string::npos) << e.body;
  EXPECT_EQ(engine->Stop(), 0);
  EXPECT_NE(engine->log().find("keeps no records of removed edges"), std::string::npos) << engine->log();
  builder.Shutdown(std::chrono::milliseconds(2000));
}

}  // namespace
}  // namespace cincinnati
