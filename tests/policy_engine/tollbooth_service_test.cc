// Per-cluster views end to end: hotfixes from graph-data shown only to the clusters a
// directory (SQLite file or a lookup service on 127.0.0.1) names, composed with
// channel targets, in `serve` and in a policy engine behind a graph builder.
#include <gtest/gtest.h>


#include "core/graph_json.h"
#include "lookup_server.h"
#include "directory/cluster_database.h"
#include "service_util.h"
#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;
using testing::MetricValue;

const std::string kAcme = "0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60";     // customer acme
const std::string kGlobex = "7c9e6679-7425-40de-944b-e07fc1f90ae7";   // globex, eu-west silver
const std::string kInitech = "f47ac10b-58cc-4372-a567-0e02b2c3d479";  // initech, eu-west gold
const std::string kStranger = "99999999-9999-4999-8999-999999999999";
constexpr const char* kHotfix = "\"4.13.1-hotfix.1\"";

std::string ImportExampleClusters(const fs::path& dir) {
  std::string db = (dir / "clusters.db").string();
  auto opened = directory::ClusterDatabase::Open(db, true);
  EXPECT_TRUE(opened.ok());
  auto records = directory::ParseClusterCsv(testing::ReadFile(testing::Examples() / "ocp-4x/clusters.csv"));
  EXPECT_TRUE(records.ok());
  EXPECT_TRUE((*opened)->Import(*records, true).ok());
  return db;
}

std::vector<std::string> FourX(const fs::path& graph_data) {
  return {"--releases", (testing::Examples() / "ocp-4x/releases").string(), "--graph-data", graph_data.string(),
          "--service.path_prefix", "", "--service.pause_secs", "1"};
}

std::string Query(const std::string& id, const std::string& extra = "") {
  return "/graph?channel=stable-4.13&version=4.12.3" + (id.empty() ? "" : "&id=" + id) + extra;
}

TEST(HotfixServiceTest, OnlyTheNamedCustomerSeesItsHotfix) {
  testing::TempDir dir;
  fs::copy(testing::Examples() / "ocp-4x/graph-data", dir / "gd", fs::copy_options::recursive);
  std::string db = ImportExampleClusters(dir.path());
  auto args = FourX(dir / "gd");
  args.insert(args.end(), {"--cluster_directory.path", db});
  ServiceProcess serve("serve", args);
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readyz", "status")).status == 200; })) << serve.log();

  std::string general = Get(serve.url(Query(""))).body;
  EXPECT_EQ(general.find(kHotfix), std::string::npos);
  EXPECT_EQ(general.find("hotfix.rules"), std::string::npos);
  // Same channel, same version: the acme cluster sees the hotfix and its edges, globex not.
  std::string acme = Get(serve.url(Query(kAcme))).body;
  auto acme_graph = ReadGraphJson(acme);
  ASSERT_TRUE(acme_graph.ok()) << acme;
  auto h = acme_graph->Find("4.13.1-hotfix.1");
  ASSERT_TRUE(h) << acme;
  EXPECT_TRUE(acme_graph->HasEdge(*acme_graph->Find("4.12.3"), *h));
  EXPECT_TRUE(acme_graph->HasEdge(*h, *acme_graph->Find("4.13.2")));
  EXPECT_EQ(acme.find("hotfix.rules"), std::string::npos);
  EXPECT_EQ(Get(serve.url(Query(kGlobex))).body, general);
  // A label selector (eu-west gold) applies to initech.
  EXPECT_NE(Get(serve.url(Query(kInitech))).body.find(kHotfix), std::string::npos);
  // Unknown cluster, no id, another channel, and a client trying to name the hotfix.
  EXPECT_EQ(Get(serve.url(Query(kStranger))).body, general);
  EXPECT_EQ(Get(serve.url(Query("", "&io.openshift.upgrades.hotfixes=acme-etcd-defrag"))).body, general);
  EXPECT_EQ(Get(serve.url("/graph?channel=candidate-4.13&id=" + kAcme)).body.find(kHotfix), std::string::npos);

  // The directory file changes while the service runs: globex becomes gold.
  auto writer = directory::ClusterDatabase::Open(db, false);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Put({kGlobex, {"globex", {{"region", "eu-west"}, {"tier", "gold"}}}},
                             directory::ClusterDatabase::PutMode::kUpdate).ok());
  EXPECT_NE(Get(serve.url(Query(kGlobex))).body.find(kHotfix), std::string::npos);

  std::string metrics = Get(serve.url("/metrics", "status")).body;
  // acme, globex, initech, the stranger, globex again; no id or no hotfix in the channel: none.
  EXPECT_EQ(MetricValue(metrics, "cincinnati_pe_cluster_directory_lookups_total"), 5) << metrics;
  EXPECT_EQ(MetricValue(metrics, "cincinnati_pe_cluster_directory_failures_total"), 0);
  EXPECT_EQ(MetricValue(metrics, "cincinnati_pe_hotfix_views_total{hotfix=\"acme-etcd-defrag\"}"), 3);

  // A broken hotfix file is refused with file and reason; the last good graph stays.
  testing::WriteFile(dir / "gd/hotfixes/broken.yaml", "customers: [acme]\nchannels: [stable-9.9]\nreleases: [4.13.0]\n");
  ASSERT_TRUE(WaitFor([&] { return serve.log().find("channel 'stable-9.9' is not defined") != std::string::npos; }))
      << serve.log();
  EXPECT_NE(serve.log().find("hotfixes/broken.yaml"), std::string::npos);
  EXPECT_EQ(Get(serve.url(Query(kAcme))).body, acme);
}

TEST(HotfixServiceTest, PolicyEngineBehindGraphBuilderAnswersLikeServe) {
  testing::TempDir dir;
  std::string db = ImportExampleClusters(dir.path());
  fs::path gd = testing::Examples() / "ocp-4x/graph-data";
  auto serve_args = FourX(gd);
  serve_args.insert(serve_args.end(), {"--cluster_directory.path", db, "--views.channel_targets", "stable-4.13"});
  ServiceProcess serve("serve", serve_args);
  ServiceProcess builder("graph-builder", FourX(gd));
  ASSERT_TRUE(WaitFor([&] { return Get(builder.url("/readiness", "status")).status == 200; })) << builder.log();
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", builder.url("/graph"), "--service.path_prefix", "",
                                          "--cluster_directory.path", db, "--views.channel_targets", "stable-4.13"});
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readyz", "status")).status == 200; })) << serve.log();
  ASSERT_TRUE(WaitFor([&] { return Get(engine.url("/readyz", "status")).status == 200; })) << engine.log();
  for (const std::string& id : {std::string(), kAcme, kGlobex, kInitech, kStranger}) {
    for (const std::string& q : {Query(id), "/graph?channel=fast-4.13&id=" + id, "/graph?channel=stable-4.13&arch=arm64&id=" + id}) {
      EXPECT_EQ(Get(engine.url(q)).body, Get(serve.url(q)).body) << q;
    }
  }
  // With the channel target (newest of stable-4.13 is 4.13.2): the hotfix lies on a path
  // from 4.12.3 to the target, so acme's view keeps it; everyone's view has one leaf.
  std::string acme = Get(serve.url(Query(kAcme))).body;
  EXPECT_NE(acme.find(kHotfix), std::string::npos);
  auto g = ReadGraphJson(acme);
  ASSERT_TRUE(g.ok());
  for (NodeIndex i = 0; i < g->node_count(); ++i) {
    if (g->successors(i).empty()) {
      EXPECT_EQ(g->node(i).version, "4.13.2");
    }
    if (g->predecessors(i).empty()) {
      EXPECT_EQ(g->node(i).version, "4.12.3");
    }
  }
  EXPECT_EQ(Get(serve.url(Query(kGlobex))).body.find(kHotfix), std::string::npos);
  std::string metrics = Get(serve.url("/metrics", "status")).body;
  EXPECT_GE(MetricValue(metrics, "cincinnati_pe_target_view_requests_total"), 7) << metrics;
}

TEST(HotfixServiceTest, RemoteDirectoryFailsOpenAndCountsIt) {
  testing::LookupServer directory({{kAcme, R"({"customer":"acme","labels":{"region":"us-east"}})"},
                                   {kInitech, R"({"customer":"initech","labels":{"region":"eu-west","tier":"gold"}})"}});
  auto args = FourX(testing::Examples() / "ocp-4x/graph-data");
  args.insert(args.end(), {"--cluster_directory.url", directory.url(), "--cluster_directory.timeout_ms", "300",
                           "--cluster_directory.failure_backoff_ms", "300", "--cluster_directory.negative_ttl_secs", "60"});
  ServiceProcess serve("serve", args);
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readyz", "status")).status == 200; })) << serve.log();
  std::string general = Get(serve.url(Query(""))).body;
  auto metric = [&](const std::string& name) { return MetricValue(Get(serve.url("/metrics", "status")).body, name); };

  // Answers: looked up once, then from the cache.
  http::Result first = Get(serve.url(Query(kAcme)));
  EXPECT_EQ(first.status, 200);
  EXPECT_NE(first.body.find(kHotfix), std::string::npos);
  EXPECT_EQ(Get(serve.url(Query(kAcme))).body, first.body);
  EXPECT_EQ(metric("cincinnati_pe_cluster_directory_lookups_total"), 2);
  EXPECT_EQ(metric("cincinnati_pe_cluster_directory_cache_hits_total"), 1);
  // Unknown: the general graph, and negative-cached.
  EXPECT_EQ(Get(serve.url(Query(kStranger))).body, general);
  int asked = directory.requests();
  EXPECT_EQ(Get(serve.url(Query(kStranger))).body, general);
  EXPECT_EQ(directory.requests(), asked);

  // Slow: the general graph, never an error. The directory would answer 404 after 1.5 s;
  // the failure counted proves the lookup gave up at its timeout instead.
  directory.set_mode(testing::LookupServer::Mode::kSlow);
  http::Result slow = Get(serve.url(Query(kInitech)));
  EXPECT_EQ(slow.status, 200);
  EXPECT_EQ(slow.body, general);
  EXPECT_EQ(metric("cincinnati_pe_cluster_directory_failures_total"), 1);
  // Errors, many requests: all 200 with the general graph; one log line for them. Requests
  // fail at once during the back-off that follows a failure, then ask the directory again.
  directory.set_mode(testing::LookupServer::Mode::kError);
  const int asked_before_errors = directory.requests();
  ASSERT_TRUE(testing::WaitFor([&] {
    EXPECT_EQ(Get(serve.url(Query(kInitech))).body, general);
    return directory.requests() > asked_before_errors;
  }));
  const double failures = metric("cincinnati_pe_cluster_directory_failures_total");
  EXPECT_GE(failures, 2);
  for (int i = 0; i < 20; ++i) {
    http::Result r = Get(serve.url(Query(kInitech)));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, general);
  }
  EXPECT_EQ(metric("cincinnati_pe_cluster_directory_failures_total"), failures + 20);
  std::string log = serve.log();
  size_t lines = 0;
  for (size_t at = log.find("lookup failed"); at != std::string::npos; at = log.find("lookup failed", at + 1)) ++lines;
  EXPECT_EQ(lines, 1u) << log;
  // Gone: cached clusters keep their view; others get the general graph.
  directory.Stop();
  EXPECT_EQ(Get(serve.url(Query(kAcme))).body, first.body);
  http::Result gone = Get(serve.url(Query(kInitech)));
  EXPECT_EQ(gone.status, 200);
  EXPECT_EQ(gone.body, general);
  EXPECT_GT(metric("cincinnati_pe_cluster_directory_failures_total"), failures + 20);
  EXPECT_EQ(MetricValue(Get(serve.url("/metrics", "status")).body, "cincinnati_pe_graph_response_errors_total"), -1);
}

}  // namespace
}  // namespace cincinnati
