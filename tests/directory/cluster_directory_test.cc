// The cluster directory (embedded SQLite and remote HTTP) and the hotfix filter.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <thread>

#include "builder/pipeline.h"
#include "core/csv.h"
#include "core/metadata_keys.h"
#include "lookup_server.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"
#include "env/clock.h"
#include "directory/cluster_database.h"
#include "policy/hotfix_filter.h"
#include "policy/phased_rollout.h"
#include "directory/remote_cluster_directory.h"
#include "service_util.h"
#include "test_util.h"

namespace cincinnati::policy {
namespace {

using namespace cincinnati::directory;  // NOLINT: the directory is what this file tests

namespace fs = std::filesystem;
using Kind = DirectoryAnswer::Kind;

const std::string kAcme = "0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60";
const std::string kGlobex = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
const std::string kInitech = "f47ac10b-58cc-4372-a567-0e02b2c3d479";

Graph FourX() {
  auto graph = testing::BuildLocal(testing::Examples() / "ocp-4x/releases", testing::Examples() / "ocp-4x/graph-data");
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  return std::move(graph).value();
}

Graph View(const Graph& graph, Parameters params, std::vector<std::string> hotfixes = {}) {
  TransformChain chain;
  chain.push_back(std::make_unique<ChannelFilter>());
  chain.push_back(std::make_unique<ArchFilter>());
  chain.push_back(std::make_unique<HotfixFilter>());
  TransformContext context;
  context.parameters = std::move(params);
  context.entitlements.hotfixes = std::move(hotfixes);
  auto view = RunChainOn(chain, graph, context);
  EXPECT_TRUE(view.ok()) << view.status().message();
  return std::move(view).value();
}

TEST(HotfixFilterTest, OnlyEntitledRequestsInTheHotfixChannelsSeeTheRelease) {
  Graph graph = FourX();
  HotfixIndex index(graph);
  ASSERT_EQ(index.rules().size(), 1u);
  using Names = std::vector<std::string>;
  EXPECT_EQ(index.Entitled({"acme", {}}, "stable-4.13"), Names{"acme-etcd-defrag"});
  EXPECT_EQ(index.Entitled({"acme", {}}, "candidate-4.13"), Names{});
  EXPECT_EQ(index.Entitled({"globex", {{"region", "eu-west"}}}, "stable-4.13"), Names{});
  EXPECT_EQ(index.Entitled({"initech", {{"region", "eu-west"}, {"tier", "gold"}}}, "stable-4.13"),
            Names{"acme-etcd-defrag"});

  Graph general = View(graph, {{"channel", "stable-4.13"}});
  Graph entitled = View(graph, {{"channel", "stable-4.13"}}, {"acme-etcd-defrag"});
  Graph other_name = View(graph, {{"channel", "stable-4.13"}}, {"some-other-fix"});
  Graph other_channel = View(graph, {{"channel", "candidate-4.13"}}, {"acme-etcd-defrag"});
  // A client cannot claim entitlements through the query (the old internal parameter).
  Graph claimed = View(graph, {{"channel", "stable-4.13"}, {"io.openshift.upgrades.hotfixes", "acme-etcd-defrag"}});
  EXPECT_FALSE(claimed.Find("4.13.1-hotfix.1"));
  EXPECT_FALSE(general.Find("4.13.1-hotfix.1"));
  EXPECT_FALSE(other_name.Find("4.13.1-hotfix.1"));
  EXPECT_FALSE(other_channel.Find("4.13.1-hotfix.1"));
  auto h = entitled.Find("4.13.1-hotfix.1");
  ASSERT_TRUE(h);
  EXPECT_EQ(entitled.node_count(), general.node_count() + 1);
  EXPECT_EQ(entitled.edge_count(), general.edge_count() + 3);
  EXPECT_TRUE(entitled.HasEdge(*entitled.Find("4.12.3"), *h));
  EXPECT_TRUE(entitled.HasEdge(*h, *entitled.Find("4.13.2")));
  // The internal key never leaves the policy engine.
  for (const Node& n : entitled.nodes()) EXPECT_FALSE(n.metadata.count("io.openshift.upgrades.graph.hotfix.rules"));
}

// Schema 2.x: the hotfix release composes with phased rollouts. Its edge into 4.4.3
// is a patch update of stable-4.4 like 4.4.2 -> 4.4.3, so it rolls out over the same
// two days at the same position for a given cluster; the edge into the hotfix (no
// start, no rule) is there at once.
TEST(HotfixFilterTest, ComposesWithPhasedRollouts) {
  testing::TempDir dir;
  fs::copy(testing::Examples() / "phased", dir / "phased", fs::copy_options::recursive);
  testing::WriteFile(dir / "phased/releases/4.4.2-hotfix.1.json",
                     R"({"kind":"cincinnati-metadata-v0","version":"4.4.2-hotfix.1","previous":[],"metadata":{}})");
  testing::WriteFile(dir / "phased/graph-data/hotfixes/fix.yaml",
                     "customers: [acme]\nchannels: [stable-4.4]\nreleases: [4.4.2-hotfix.1]\n"
                     "edges:\n- {from: 4.4.2, to: 4.4.2-hotfix.1}\n- {from: 4.4.2-hotfix.1, to: 4.4.3}\n");
  auto graph = testing::BuildLocal(dir / "phased/releases", dir / "phased/graph-data");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto view = [&](int64_t now, Parameters p, std::vector<std::string> hotfixes) {
    TransformChain chain;
    chain.push_back(std::make_unique<ChannelFilter>());
    chain.push_back(std::make_unique<ArchFilter>());
    chain.push_back(std::make_unique<HotfixFilter>());
    chain.push_back(std::make_unique<PhasedRollout>(env::ManualClock::AtUnixSeconds(now)));
    TransformContext context;
    context.parameters = std::move(p);
    context.entitlements.hotfixes = std::move(hotfixes);
    auto g = RunChainOn(chain, *graph, context);
    EXPECT_TRUE(g.ok()) << g.status().message();
    return std::move(g).value();
  };
  const int64_t start_443 = 1589241600;  // 2020-05-12T00:00Z
  const Parameters entitled{{"channel", "stable-4.4"}};
  for (const char* id : {"00000000-0000-4000-8000-000000000000", "0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60",
                         "f47ac10b-58cc-4372-a567-0e02b2c3d479"}) {
    Parameters p = entitled;
    p["id"] = id;
    Graph early = view(start_443 + 3600, p, {"fix"});
    auto h = early.Find("4.4.2-hotfix.1");
    ASSERT_TRUE(h);
    EXPECT_TRUE(early.HasEdge(*early.Find("4.4.2"), *h));
    EXPECT_EQ(early.HasEdge(*h, *early.Find("4.4.3")), early.HasEdge(*early.Find("4.4.2"), *early.Find("4.4.3"))) << id;
    Graph late = view(start_443 + 3 * 86400, p, {"fix"});
    EXPECT_TRUE(late.HasEdge(*late.Find("4.4.2-hotfix.1"), *late.Find("4.4.3")));
    for (const Node& n : late.nodes()) EXPECT_FALSE(n.metadata.count("io.openshift.upgrades.graph.phased.start"));
    EXPECT_FALSE(view(start_443 + 3 * 86400, p, {}).Find("4.4.2-hotfix.1"));
  }
}

TEST(ClusterDatabaseTest, AddUpdateRemoveListImportExport) {
  testing::TempDir dir;
  const std::string path = (dir / "clusters.db").string();
  EXPECT_EQ(ClusterDatabase::Open(path, false).status().code(), Status::Code::kNotFound);
  auto db = ClusterDatabase::Open(path, true);
  ASSERT_TRUE(db.ok()) << db.status().message();
  ASSERT_TRUE((*db)->Put({kAcme, {"acme", {{"tier", "gold"}}}}, ClusterDatabase::PutMode::kInsert).ok());
  EXPECT_EQ((*db)->Put({kAcme, {"acme", {}}}, ClusterDatabase::PutMode::kInsert).code(), Status::Code::kConflict);
  EXPECT_EQ((*db)->Put({kGlobex, {"globex", {}}}, ClusterDatabase::PutMode::kUpdate).code(), Status::Code::kNotFound);
  EXPECT_FALSE((*db)->Put({"has space", {"x", {}}}, ClusterDatabase::PutMode::kInsert).ok());
  EXPECT_FALSE((*db)->Put({kGlobex, {"a|b", {}}}, ClusterDatabase::PutMode::kInsert).ok());
  // Ids are case-insensitive.
  ASSERT_TRUE((*db)->Put({"0B4F6B0E-6F62-4A3C-9F3E-1D2C3B4A5F60", {"acme", {{"tier", "silver"}}}},
                         ClusterDatabase::PutMode::kUpdate).ok());
  auto one = (*db)->Get(kAcme);
  ASSERT_TRUE(one.ok() && one->has_value());
  EXPECT_EQ((*one)->cluster.labels.at("tier"), "silver");

  auto csv = ParseClusterCsv("id,customer,labels\n" + kGlobex + ",globex,region=eu-west;tier=gold\n" + kInitech + ",initech,\n");
  ASSERT_TRUE(csv.ok()) << csv.status().message();
  ASSERT_TRUE((*db)->Import(*csv, false).ok());
  auto all = (*db)->List();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 3u);
  // Export and re-import round-trips in both formats.
  auto from_json = ParseClusterJson(WriteClusterJson(*all));
  auto from_csv = ParseClusterCsv(WriteClusterCsv(*all));
  ASSERT_TRUE(from_json.ok() && from_csv.ok());
  EXPECT_EQ(*from_json, *all);
  EXPECT_EQ(*from_csv, *all);
  // An import with one bad record changes nothing.
  auto bad = ParseClusterJson(R"([{"id":"x1","customer":"c"},{"id":"x2","labels":{"k":1}}])");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("[1]"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(ParseClusterCsv("id,customer,labels\nx1,c,novalue\n").ok());
  ASSERT_TRUE((*db)->Import({{"x9", {"c", {}}}}, true).ok());
  EXPECT_EQ((*db)->List()->size(), 1u);
  EXPECT_TRUE((*db)->Remove("x9").ok());
  EXPECT_EQ((*db)->Remove("x9").code(), Status::Code::kNotFound);
}

TEST(CsvTest, QuotedFieldsHoldCommasQuotesAndLineBreaks) {
  auto rows = ReadCsv("a,\"b,1\",\"say \"\"hi\"\"\"\r\n\n\"two\nlines\",x\nlast");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].fields, (std::vector<std::string>{"a", "b,1", "say \"hi\""}));
  EXPECT_EQ((*rows)[1].line, 3u);
  EXPECT_EQ((*rows)[1].fields, (std::vector<std::string>{"two\nlines", "x"}));
  EXPECT_EQ((*rows)[2].line, 5u);
  EXPECT_EQ(CsvField("a,\"b\""), "\"a,\"\"b\"\"\"");
  EXPECT_EQ(CsvField("plain"), "plain");
  EXPECT_EQ(ReadCsv("\"a\"b,c").status().message(), "line 1: text after a closing quote");
}

// The same cluster twice is an error naming both places (it used to keep the last row).
TEST(ClusterImportTest, DuplicatesAreRefusedAndQuotedFieldsAccepted) {
  auto twice = ParseClusterCsv("id,customer,labels\n" + kGlobex + ",globex,\n" + kInitech + ",initech,\n" +
                               kGlobex + ",globex-two,\n");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().message(),
            "line 4: cluster " + kGlobex + " is already on line 2 (one line per cluster)");
  std::string upper = kGlobex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_FALSE(ParseClusterCsv(kGlobex + ",a,\n" + upper + ",b,\n").ok());  // ids are case-insensitive
  auto json = ParseClusterJson("[{\"id\":\"x1\",\"customer\":\"c\"},{\"id\":\"x1\",\"customer\":\"d\"}]");
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(json.status().message(), "[1]: cluster x1 is already at [0] (one entry per cluster)");

  // RFC 4180, as spreadsheets write it: every field quoted, CRLF between records.
  auto quoted = ParseClusterCsv("\"id\",\"customer\",\"labels\"\r\n\"" + kGlobex +
                                "\",\"globex\",\"region=eu-west;tier=gold\"\r\n");
  ASSERT_TRUE(quoted.ok()) << quoted.status().message();
  ASSERT_EQ(quoted->size(), 1u);
  EXPECT_EQ((*quoted)[0].cluster.labels.at("tier"), "gold");
  // A quoted comma is part of the field (here a label value the directory refuses).
  auto comma = ParseClusterCsv(kGlobex + ",globex,\"note=a,b\"\n");
  ASSERT_FALSE(comma.ok());
  EXPECT_NE(comma.status().message().find("label 'note=a,b'"), std::string::npos) << comma.status().message();
  auto open_quote = ParseClusterCsv("id,customer\n\"x1,c\n");
  ASSERT_FALSE(open_quote.ok());
  EXPECT_EQ(open_quote.status().message(), "line 2: a quoted field is not closed");
  EXPECT_FALSE(ParseClusterCsv("x1,c\"d\",\n").ok());
}

TEST(SqliteClusterDirectoryTest, SeesWritesAndAReplacedFile) {
  testing::TempDir dir;
  const std::string path = (dir / "clusters.db").string();
  SqliteClusterDirectory missing((dir / "absent.db").string());
  EXPECT_EQ(missing.Lookup(kAcme).kind, Kind::kFailed);

  auto db = ClusterDatabase::Open(path, true);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Put({kAcme, {"acme", {{"tier", "gold"}}}}, ClusterDatabase::PutMode::kInsert).ok());
  SqliteClusterDirectory directory(path, 2);
  DirectoryAnswer a = *directory.Quick(kAcme);
  EXPECT_EQ(a.kind, Kind::kFound);
  EXPECT_EQ(a.cluster, (ClusterInfo{"acme", {{"tier", "gold"}}}));
  EXPECT_EQ(directory.Lookup(kGlobex).kind, Kind::kUnknown);
  // A write by another connection shows at the next lookup.
  ASSERT_TRUE((*db)->Put({kGlobex, {"globex", {}}}, ClusterDatabase::PutMode::kInsert).ok());
  EXPECT_EQ(directory.Lookup(kGlobex).cluster.customer, "globex");

  // A new file renamed over the old one is picked up within about a second.
  const std::string fresh = (dir / "fresh.db").string();
  {
    auto other = ClusterDatabase::Open(fresh, true);
    ASSERT_TRUE(other.ok());
    ASSERT_TRUE((*other)->Put({kInitech, {"initech", {}}}, ClusterDatabase::PutMode::kInsert).ok());
  }
  ASSERT_EQ(std::rename(fresh.c_str(), path.c_str()), 0);
  EXPECT_TRUE(testing::WaitFor([&] { return directory.Lookup(kInitech).kind == Kind::kFound; }, std::chrono::seconds(5)));
  EXPECT_EQ(directory.Lookup(kAcme).kind, Kind::kUnknown);
}

TEST(RemoteClusterDirectoryTest, CachesFailsFastAndRecovers) {
  testing::LookupServer server({{kAcme, R"({"customer":"acme","labels":{"tier":"gold"}})"}, {kGlobex, "not json"}});
  RemoteDirectoryOptions o;
  o.base_url = server.url() + "/";
  o.timeout = std::chrono::milliseconds(300);
  o.ttl = std::chrono::seconds(60);
  o.negative_ttl = std::chrono::seconds(60);
  o.failure_backoff = std::chrono::milliseconds(400);
  o.max_entries = 2;
  env::ManualClock clock;
  o.clock = &clock;
  RemoteClusterDirectory directory(o);

  EXPECT_FALSE(directory.Quick(kAcme));  // nothing cached yet: must be looked up
  DirectoryAnswer found = directory.Lookup(kAcme);
  EXPECT_EQ(found.kind, Kind::kFound);
  EXPECT_EQ(found.cluster.labels.at("tier"), "gold");
  EXPECT_FALSE(found.from_cache);
  auto cached = directory.Quick(kAcme);
  ASSERT_TRUE(cached);
  EXPECT_TRUE(cached->from_cache);
  EXPECT_EQ(cached->cluster.customer, "acme");
  // Unknown: cached too (negative caching), so the server is asked once.
  int before = server.requests();
  EXPECT_EQ(directory.Lookup(kInitech).kind, Kind::kUnknown);
  EXPECT_EQ(directory.Lookup(kInitech).kind, Kind::kUnknown);
  EXPECT_EQ(server.requests(), before + 1);
  // A bad body is a failure; during the backoff, uncached ids fail at once.
  DirectoryAnswer broken = directory.Lookup(kGlobex);
  EXPECT_EQ(broken.kind, Kind::kFailed);
  EXPECT_NE(broken.error.find("invalid JSON"), std::string::npos) << broken.error;
  auto backing_off = directory.Quick("11111111-2222-3333-4444-555555555555");
  ASSERT_TRUE(backing_off);
  EXPECT_EQ(backing_off->kind, Kind::kFailed);
  before = server.requests();
  EXPECT_EQ(directory.Lookup("22222222-2222-3333-4444-555555555555").kind, Kind::kFailed);
  EXPECT_EQ(server.requests(), before);  // not asked during the back-off
  clock.Advance(std::chrono::milliseconds(399));
  EXPECT_TRUE(directory.Quick("11111111-2222-3333-4444-555555555555"));
  clock.Advance(std::chrono::milliseconds(1));
  EXPECT_FALSE(directory.Quick("11111111-2222-3333-4444-555555555555"));  // the back-off is over: look it up

  // Slow: the lookup gives up after the timeout (the server would answer 404 in 1.5 s).
  server.set_mode(testing::LookupServer::Mode::kSlow);
  DirectoryAnswer slow = directory.Lookup("aaaaaaaa-2222-3333-4444-555555555555");
  EXPECT_EQ(slow.kind, Kind::kFailed);
  EXPECT_NE(slow.error.find("timed out"), std::string::npos) << slow.error;
  clock.Advance(o.failure_backoff);
  // Errors.
  server.set_mode(testing::LookupServer::Mode::kError);
  DirectoryAnswer error = directory.Lookup("bbbbbbbb-2222-3333-4444-555555555555");
  EXPECT_EQ(error.kind, Kind::kFailed);
  EXPECT_NE(error.error.find("HTTP 500"), std::string::npos) << error.error;
  // Gone: cached answers still come from the cache.
  server.Stop();
  clock.Advance(o.failure_backoff);
  EXPECT_EQ(directory.Lookup("cccccccc-2222-3333-4444-555555555555").kind, Kind::kFailed);
  EXPECT_EQ(directory.Quick(kAcme)->kind, Kind::kFound);
  // The cache stays within its bound; entries expire with their TTL.
  EXPECT_LE(directory.cached(), 2u);
  clock.Advance(o.ttl);
  EXPECT_FALSE(directory.Quick(kAcme));
}

}  // namespace
}  // namespace cincinnati::policy
