// Internal metadata is decoded totally: hostile values become errors that name the item,
// a graph carrying them is never served, and a release cannot set them itself.
#include <gtest/gtest.h>

#include "builder/release_check.h"
#include "builder/release_sources.h"
#include "core/graph_check.h"
#include "core/graph_json.h"
#include "core/graph_records.h"
#include "core/hotfix_rule.h"
#include "core/internal_metadata.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"
#include "policy/channel_target.h"
#include "policy/hotfix_filter.h"
#include "policy/phased_rollout.h"
#include "core/sha256.h"
#include "graph_builder/graph_builder_service.h"
#include "service/view_cache.h"
#include "test_util.h"

namespace cincinnati {
namespace {

const std::string kStart = "io.openshift.upgrades.graph.phased.start";
const std::string kRollouts = "io.openshift.upgrades.graph.phased.rollouts";
const std::string kHotfix = "io.openshift.upgrades.graph.hotfix.rules";
const std::string kTargets = "io.openshift.upgrades.graph.channel.targets";
const std::string kChannels = "io.openshift.upgrades.graph.release.channels";

TEST(InternalMetadataTest, PhasedStartsRoundTrip) {
  std::string value = EncodeChannelStart("stable-4.4", 1589241600) + "," + EncodeChannelStart("a=b", -5);
  auto starts = DecodePhasedStarts(value);
  ASSERT_TRUE(starts.ok()) << starts.status().message();
  EXPECT_EQ(*starts, (std::vector<ChannelStart>{{"stable-4.4", 1589241600}, {"a=b", -5}}));
}

TEST(InternalMetadataTest, HostilePhasedStartsAreErrorsNamingTheItem) {
  for (std::string bad : {"", "stable", "stable=", "=5", "stable=abc", "stable=1e5", "stable= 5", "stable=5 ",
                          "stable=99999999999999999999", "stable=253402300800", "stable=-62135596801",
                          "stable=5,", "stable=5,,other=6", "stable=0x10"}) {
    auto starts = DecodePhasedStarts(bad);
    EXPECT_FALSE(starts.ok()) << "'" << bad << "' decoded";
  }
  auto named = DecodePhasedStarts("ok=1,stable=abc");
  ASSERT_FALSE(named.ok());
  EXPECT_NE(named.status().message().find("stable=abc"), std::string::npos) << named.status().message();
}

TEST(InternalMetadataTest, PhasedRolloutsRoundTripAndRefuseGarbage) {
  ChannelRollouts c{"stable-4.4", {{"minor", 86400}, {"*", 3600}}};
  auto decoded = DecodePhasedRollouts(EncodeChannelRollouts(c) + ";" + EncodeChannelRollouts({"fast-4.4", {{"patch", 0}}}));
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  ASSERT_EQ(decoded->size(), 2u);
  EXPECT_EQ((*decoded)[0], c);
  EXPECT_EQ(EncodeChannelRollouts({"x", {}}), "");
  for (std::string bad : {"", "stable", "stable:", ":minor=5", "stable:minor", "stable:minor=", "stable:=5",
                          "stable:minor=-1", "stable:minor=abc", "stable:minor=99999999999999", "stable:minor=5;",
                          "stable:minor=5,,patch=6"}) {
    EXPECT_FALSE(DecodePhasedRollouts(bad).ok()) << "'" << bad << "' decoded";
  }
}

TEST(InternalMetadataTest, HotfixRulesDecodeStrictly) {
  HotfixRule rule{"fix", {"stable-4.13"}, {"acme"}, {{{"tier", "gold"}, {"empty", ""}}}};
  auto decoded = DecodeHotfixRules(EncodeHotfixRule(rule));
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(*decoded, std::vector<HotfixRule>{rule});
  for (std::string bad : {"", "fix", "fix|c|a", "fix|c|a|s|x", "|c|a|", "f x|c|a|", "fix||a|", "fix|c,d e|a|",
                          "fix|c|a|tier", "fix|c|a|=gold", "fix|c|a|tier=g old", "fix|c|a|;"}) {
    EXPECT_FALSE(DecodeHotfixRules(bad).ok()) << "'" << bad << "' decoded";
  }
}

TEST(InternalMetadataTest, ReservedKeysFollowThePrefix) {
  EXPECT_TRUE(IsReservedKey(kStart));
  EXPECT_TRUE(IsReservedKey(kHotfix));
  EXPECT_TRUE(IsReservedKey(kTargets));
  EXPECT_TRUE(IsReservedKey("my.prefix.phased.rollouts", "my.prefix"));
  EXPECT_FALSE(IsReservedKey(kStart, "my.prefix"));
  EXPECT_FALSE(IsReservedKey(kChannels));
  EXPECT_FALSE(IsReservedKey("io.openshift.upgrades.graph.previous.add"));
  EXPECT_FALSE(IsReservedKey("io.openshift.upgrades.graph.phased.start.x"));
}

// A graph builder's graph of two releases in "stable-4.4" whose target carries `key`
// set to `value`.
Graph GraphWith(const std::string& key, const std::string& value) {
  Graph g;
  Metadata common{{kChannels, "stable-4.4"}, {"io.openshift.upgrades.graph.release.arch", "amd64"}};
  Metadata target = common;
  target[key] = value;
  NodeIndex a = g.AddNode(Node::Concrete("4.4.0+amd64", "quay.io/r@sha256:a", common)).value();
  NodeIndex b = g.AddNode(Node::Concrete("4.4.1+amd64", "quay.io/r@sha256:b", target)).value();
  EXPECT_TRUE(g.AddEdge(a, b).ok());
  return g;
}

TEST(InternalMetadataTest, CheckServableNamesTheNodeAndKey) {
  EXPECT_TRUE(CheckServable(GraphWith(kStart, "stable-4.4=1589241600")).ok());
  EXPECT_TRUE(CheckServable(GraphWith(kTargets, "anything, at all")).ok());
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {kStart, "stable-4.4=soon"}, {kRollouts, "stable-4.4:minor=forever"}, {kHotfix, "not a rule"}}) {
    Status st = CheckServable(GraphWith(key, value));
    ASSERT_FALSE(st.ok()) << key;
    EXPECT_NE(st.message().find("4.4.1+amd64"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(key), std::string::npos) << st.message();
  }
}

// Every policy step meets the hostile value as an error, never as an exception.
TEST(InternalMetadataTest, PolicyStepsReturnErrorsOnUndecodableKeys) {
  TransformChain chain;
  chain.push_back(std::make_unique<policy::ChannelFilter>());
  chain.push_back(std::make_unique<policy::ArchFilter>());
  chain.push_back(std::make_unique<policy::HotfixFilter>());
  chain.push_back(std::make_unique<policy::ChannelTarget>(std::set<std::string>{"*"}));
  chain.push_back(std::make_unique<policy::PhasedRollout>(env::ManualClock::AtUnixSeconds(1600000000)));
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {kStart, "stable-4.4=9223372036854775807"}, {kRollouts, "stable-4.4:minor=-7"}, {kHotfix, "x|y"}}) {
    Graph g = GraphWith(key, value);
    TransformContext context;
    context.parameters = {{"channel", "stable-4.4"}, {"arch", "amd64"}, {"version", "4.4.0"},
                          {"id", "01234567-89ab-cdef-0123-456789abcdef"}};
    context.entitlements.hotfixes = {"y"};
    auto out = RunChainOn(chain, g, context);
    ASSERT_FALSE(out.ok()) << key;
    EXPECT_NE(out.status().message().find(key), std::string::npos) << out.status().message();
    EXPECT_EQ(policy::RolloutWindows(g).ok(), key == kHotfix);
  }
}

// Found by the policy_chain fuzzer: rules without any start made the view cache skip
// the phased step, and the internal rules key reached clients.
TEST(InternalMetadataTest, RulesWithoutStartsNeverLeaveThePolicyEngine) {
  TransformChain chain;
  chain.push_back(std::make_unique<policy::ChannelFilter>());
  chain.push_back(std::make_unique<policy::ArchFilter>());
  chain.push_back(std::make_unique<policy::PhasedRollout>(env::ManualClock::AtUnixSeconds(1600000000)));
  server::ViewCache cache(chain, std::make_shared<const Graph>(GraphWith(kRollouts, "stable-4.4:patch=60")));
  auto view = cache.Get({{"channel", "stable-4.4"}, {"arch", "amd64"}});
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_EQ((*view)->body()->find("phased"), std::string::npos) << *(*view)->body();
}

TEST(ReleaseCheckTest, ReservedKeysAndUnusableDirectivesAreRefused) {
  Metadata ok{{"io.openshift.upgrades.graph.release.arch", "amd64"},
              {"io.openshift.upgrades.graph.previous.add", "4.1.0, 4.1.1"},
              {"io.openshift.upgrades.graph.previous.remove", "*"},
              {"io.openshift.upgrades.graph.previous.remove_regex", "4[.]1[.].*"},
              {"url", "https://example.com"}};
  EXPECT_TRUE(CheckReleaseMetadata(ok).ok());
  auto with = [&](const std::string& key, const std::string& value) {
    Metadata m = ok;
    m[key] = value;
    return CheckReleaseMetadata(m);
  };
  for (const std::string& key : {kStart, kRollouts, kHotfix, kTargets}) {
    Status st = with(key, "stable-4.4=1");
    ASSERT_FALSE(st.ok()) << key;
    EXPECT_NE(st.message().find(key), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("reserved"), std::string::npos) << st.message();
  }
  EXPECT_FALSE(with("io.openshift.upgrades.graph.previous.remove_regex", "4[.(").ok());
  EXPECT_FALSE(with("io.openshift.upgrades.graph.previous.add", "4.1").ok());
  EXPECT_FALSE(with("io.openshift.upgrades.graph.next.remove", "4.1.0,").ok());
  EXPECT_FALSE(with("io.openshift.upgrades.graph.release.arch", "amd 64").ok());
  EXPECT_TRUE(with(kChannels, "stable-4.4").ok());  // the reference's behaviour: channels may come from a release
}

TEST(ReleaseCheckTest, AnUnusableReleaseIsLeftOutAndTheRestLoads) {
  testing::TempDir dir;
  auto doc = [](const std::string& version, const std::string& previous, const std::string& metadata) {
    return R"({"kind":"cincinnati-metadata-v0","version":")" + version + R"(","previous":[)" + previous +
           R"(],"metadata":{)" + metadata + "}}";
  };
  testing::WriteFile(dir / "a.json", doc("4.1.0", "", ""));
  testing::WriteFile(dir / "b.json", doc("4.1.1", R"("4.1.0")", R"("url":"u")"));
  testing::WriteFile(dir / "c.json", doc("4.1.2", R"("4.1.1")", "\"" + kStart + R"(":"stable-4.1=garbage")"));
  testing::WriteFile(dir / "d.json", doc("4.1.3", R"("4.1.1")",
                                         R"("io.openshift.upgrades.graph.previous.remove_regex":"(")"));
  TransformContext context;
  auto graph = LoadReleases(dir.path(), {}, context);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  EXPECT_TRUE(graph->Find("4.1.0+amd64"));
  EXPECT_TRUE(graph->Find("4.1.1+amd64"));
  EXPECT_FALSE(graph->Find("4.1.2+amd64"));
  EXPECT_FALSE(graph->Find("4.1.3+amd64"));
  EXPECT_EQ(context.rejected_releases, 2u);
  std::string warnings;
  for (const Diagnostic& d : context.diagnostics.items()) warnings += d.location + ": " + d.message + "\n";
  EXPECT_NE(warnings.find("4.1.2+amd64: release left out of the graph: metadata key '" + kStart), std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("4.1.3+amd64"), std::string::npos) << warnings;

  // The same nodes in a raw graph file: left out with their edges.
  Graph raw = GraphWith(kHotfix, "fix|stable-4.4|acme|");
  testing::WriteFile(dir / "raw/graph.json", WriteGraphJson(raw));
  TransformContext file_context;
  auto from_file = LoadReleases(dir / "raw/graph.json", {}, file_context);
  ASSERT_TRUE(from_file.ok()) << from_file.status().message();
  EXPECT_EQ(from_file->node_count(), 1u);
  EXPECT_EQ(from_file->edge_count(), 0u);
  EXPECT_EQ(file_context.rejected_releases, 1u);
}

}  // namespace
}  // namespace cincinnati

namespace cincinnati {
namespace {

TEST(ExplanationKeysTest, BlockRecordsAndRemovedEdgesRoundTripAndRefuseJunk) {
  std::vector<BlockRecord> records{{false, "blocked-edges/a;b:c=d%.yaml", "4[.]1[.](0|1);x=y"},
                                   {true, "blocked-edges/4.13.2-Risk.yaml", ".*"}};
  std::string value = EncodeBlockRecord(records[0]) + ";" + EncodeBlockRecord(records[1]);
  auto decoded = DecodeBlockRecords(value);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(*decoded, records);
  for (const char* junk : {"", "x:file=re", "u:file", "u:fi%zzle=re", "u:file=re%2"}) {
    EXPECT_FALSE(DecodeBlockRecords(junk).ok()) << junk;
  }
  auto edges = DecodeRemovedEdges("4.1.0+amd64=previous.remove_regex,4.1.1=next.remove");
  ASSERT_TRUE(edges.ok());
  EXPECT_EQ(edges->at(0), (RemovedEdge{"4.1.0+amd64", "previous.remove_regex"}));
  EXPECT_FALSE(DecodeRemovedEdges("4.1.0").ok());
  // A graph carrying undecodable records is never served, and a release cannot set them.
  Metadata bad{{"io.openshift.upgrades.graph.blocked.by", "nonsense"}};
  EXPECT_FALSE(CheckInternalMetadata(bad).ok());
  EXPECT_TRUE(IsReservedKey("io.openshift.upgrades.graph.removed.previous"));
  // Stripping leaves every other key.
  Graph g;
  ASSERT_TRUE(g.AddNode(Node::Concrete("1.0.0", "p", {{"io.openshift.upgrades.graph.removed.next", "1.1.0"},
                                                      {"url", "u"}}))
                  .ok());
  EXPECT_TRUE(HasExplanationKeys(g));
  Graph stripped = StripExplanationKeys(g);
  EXPECT_FALSE(HasExplanationKeys(stripped));
  EXPECT_EQ(stripped.node(0).metadata, (Metadata{{"url", "u"}}));
}

}  // namespace
}  // namespace cincinnati

namespace cincinnati {
namespace {

// The records travel apart from the graph (core/graph_records.h): taken out whole,
// written, read back, tied to one graph by its hash, and merged back by version.
TEST(GraphRecordsTest, RecordsLeaveTheGraphAndComeBackByVersion) {
  Graph g;
  ASSERT_TRUE(g.AddNode(Node::Concrete("4.1.0", "p0", {{"url", "u"}})).ok());
  ASSERT_TRUE(g.AddNode(Node::Concrete("4.1.1", "p1",
                                       {{"io.openshift.upgrades.graph.blocked.by", "u:blocked-edges/4.1.1.yaml=4[.]1[.]0"},
                                        {"io.openshift.upgrades.graph.removed.previous", "4.1.0=previous.remove_regex"},
                                        {"io.openshift.upgrades.graph.release.channels", "stable-4.1"}}))
                  .ok());
  const Graph original = g;
  GraphRecords records = TakeGraphRecords(g);
  EXPECT_FALSE(HasExplanationKeys(g));
  EXPECT_EQ(g.node(1).metadata, (Metadata{{"io.openshift.upgrades.graph.release.channels", "stable-4.1"}}));
  ASSERT_EQ(records.nodes.size(), 1u);
  records.graph_sha256 = std::string(64, 'a');
  const std::string text = WriteGraphRecordsJson(records);
  auto read = ReadGraphRecordsJson(text);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->graph_sha256, records.graph_sha256);
  EXPECT_EQ(read->nodes, records.nodes);
  EXPECT_EQ(MergeGraphRecords(g, *read), 0u);
  EXPECT_EQ(WriteGraphJson(g), WriteGraphJson(original));
  // A record of a release the graph does not have is skipped, and said.
  read->nodes["9.9.9"] = read->nodes.begin()->second;
  EXPECT_EQ(MergeGraphRecords(g, *read), 1u);
}

TEST(GraphRecordsTest, TheReaderRefusesWhatIsNotRecords) {
  const std::string hash(64, '0');
  const std::string head = R"({"graph":")" + hash + R"(","nodes":)";
  const std::string blocked = R"("io.openshift.upgrades.graph.blocked.by":"u:f.yaml=x")";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "invalid JSON"},
      {"[]", "expected an object"},
      {R"({"nodes":{}})", "graph: required"},
      {R"({"graph":")" + hash + R"("})", "nodes: required"},
      {R"({"graph":"x","nodes":{}})", "graph: expected a SHA-256"},
      {head + "[]}", "nodes: expected an object"},
      {head + R"({},"extra":1})", "unknown key \"extra\""},
      {head + R"({},"graph":")" + hash + R"("})", "graph: given twice"},
      {head + R"({},"nodes":{}})", "nodes: given twice"},
      {head + R"({"4.1.0":{"url":"u"}}})", "\"url\" is not an explanation key"},
      {head + R"({"4.1.0":{"io.openshift.upgrades.graph.blocked.by":"nonsense"}}})", "blocked.by"},
      {head + R"({"4.1.0":{"io.openshift.upgrades.graph.removed.next":1}}})", "expected a string"},
      {head + R"({"4.1.0":{}}})", "no record"},
      {head + R"({"4.1.0":{)" + blocked + "," + blocked + "}}}", "is given twice"},
      {head + R"({"4.1.0":{)" + blocked + R"(},"4.1.0":{)" + blocked + "}}}", "is listed twice"},
      {head + R"({"":{)" + blocked + "}}}", "an empty version"},
  };
  for (const auto& [junk, reason] : cases) {
    auto read = ReadGraphRecordsJson(junk);
    ASSERT_FALSE(read.ok()) << junk;
    EXPECT_EQ(read.status().message().rfind("graph records: ", 0), 0u) << read.status().message();
    EXPECT_NE(read.status().message().find(reason), std::string::npos) << read.status().message();
  }
  EXPECT_TRUE(ReadGraphRecordsJson(head + "{}}").ok());
  // At most as many nodes as the graph has; untrusted text in messages is cut.
  const std::string two = head + R"({"4.1.0":{)" + blocked + R"(},"4.1.1":{)" + blocked + "}}}";
  EXPECT_TRUE(ReadGraphRecordsJson(two, 2).ok());
  EXPECT_NE(ReadGraphRecordsJson(two, 1).status().message().find("more than 1"), std::string::npos);
  auto long_key = ReadGraphRecordsJson(head + R"({"4.1.0":{")" + std::string(5000, 'k') + R"(":"v"}}})");
  ASSERT_FALSE(long_key.ok());
  EXPECT_LT(long_key.status().message().size(), 300u);
  // A valid document one byte over the cap is refused for its size.
  std::string big = head + "{}}";
  big.insert(1, kMaxGraphRecordsBytes + 1 - big.size(), ' ');
  auto too_big = ReadGraphRecordsJson(big);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("over the limit"), std::string::npos) << too_big.status().message();
  big.erase(1, 1);
  EXPECT_TRUE(ReadGraphRecordsJson(big).ok());
}

// The records of every prefix the builder's steps write with leave the graph.
TEST(GraphRecordsTest, RecordsOfAnotherPrefixLeaveTheGraphToo) {
  Graph g;
  ASSERT_TRUE(g.AddNode(Node::Concrete("4.1.1", "p1", {{"example.com.removed.next", "4.1.2"}, {"url", "u"}})).ok());
  EXPECT_NE(WriteServedGraphJson(g).find("example.com.removed.next"), std::string::npos);
  GraphRecords records;
  const std::string served = WriteServedGraphJson(g, &records, {"io.openshift.upgrades.graph", "example.com"});
  EXPECT_EQ(served.find("removed.next"), std::string::npos) << served;
  ASSERT_EQ(records.nodes.size(), 1u);
  EXPECT_TRUE(ReadGraphRecordsJson(WriteGraphRecordsJson(records), 1, {"example.com"}).ok());
  EXPECT_FALSE(ReadGraphRecordsJson(WriteGraphRecordsJson(records), 1).ok());  // not a default-prefix key
}

}  // namespace
}  // namespace cincinnati

namespace cincinnati {
namespace {

// A chain step that makes one fixed graph.
class FixedGraph : public GraphTransform {
 public:
  explicit FixedGraph(Graph graph) : graph_(std::move(graph)) {}
  std::string_view name() const override { return "fixed-graph"; }
  Result<Graph> Apply(Graph, TransformContext&) const override { return graph_; }

 private:
  Graph graph_;
};

http_server::Response Ask(server::GraphBuilderService& service, const char* accept) {
  http_server::Request r;
  r.method = "GET";
  r.path = r.target = "/graph";
  if (accept) r.headers["Accept"] = accept;
  return service.HandleMain(r);
}

// The graph builder's one URL, two documents: the reference's graph to every Accept the
// reference negotiates, the records to their media type only; 503 for the records
// before the first graph (asked again), and every answer varies on Accept.
TEST(GraphRecordsTest, TheBuilderServesTheGraphAndItsRecordsApart) {
  Graph g;
  ASSERT_TRUE(g.AddNode(Node::Concrete("4.1.0", "p0", {{"io.openshift.upgrades.graph.release.channels", "a"}})).ok());
  ASSERT_TRUE(g.AddNode(Node::Concrete("4.1.1", "p1",
                                       {{"io.openshift.upgrades.graph.release.channels", "a"},
                                        {"io.openshift.upgrades.graph.removed.previous", "4.1.0=previous.remove"}}))
                  .ok());
  TransformChain chain;
  chain.push_back(std::make_unique<FixedGraph>(g));
  server::GraphBuilderService service(std::move(chain), {}, "test");
  const char* records_type = "application/vnd.cincinnati.graph-records+json";
  http_server::Response early = Ask(service, records_type);
  EXPECT_EQ(early.status, 503);
  EXPECT_EQ(early.headers["Vary"], "Accept, Accept-Encoding");
  EXPECT_EQ(Ask(service, "application/json").status, 200);

  ASSERT_TRUE(service.RefreshOnce());
  for (const char* accept : {static_cast<const char*>(nullptr), "application/json", "*/*", "application/*"}) {
    http_server::Response graph = Ask(service, accept);
    ASSERT_EQ(graph.status, 200) << (accept ? accept : "no Accept");
    EXPECT_EQ(*graph.body, WriteServedGraphJson(g)) << (accept ? accept : "no Accept");
    EXPECT_EQ(graph.body->find("removed.previous"), std::string::npos);
    EXPECT_EQ(graph.headers["Vary"], "Accept, Accept-Encoding");
  }
  http_server::Response records = Ask(service, records_type);
  ASSERT_EQ(records.status, 200);
  EXPECT_EQ(records.headers["Content-Type"], records_type);
  auto read = ReadGraphRecordsJson(*records.body, g.node_count());
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->graph_sha256, Sha256Hex(*Ask(service, "application/json").body));
  EXPECT_EQ(read->nodes.at("4.1.1").at("io.openshift.upgrades.graph.removed.previous"), "4.1.0=previous.remove");
  // The in-process graph (a policy engine in the same process) keeps them.
  EXPECT_TRUE(HasExplanationKeys(*service.Latest()->graph));
  // A list of types is not the records' type: the reference's negotiation refuses it.
  EXPECT_EQ(Ask(service, "application/vnd.cincinnati.graph-records+json, application/json").status, 406);
}

}  // namespace
}  // namespace cincinnati
