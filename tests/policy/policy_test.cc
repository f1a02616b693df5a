#include <gtest/gtest.h>

#include "core/error_document.h"
#include "core/graph_json.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"
#include "policy/params.h"
#include "test_util.h"

namespace cincinnati::policy {
namespace {

using cincinnati::testing::EdgeStrings;
using Edges = std::vector<std::string>;

const std::string kChannels = "io.openshift.upgrades.graph.release.channels";
const std::string kArch = "io.openshift.upgrades.graph.release.arch";

Result<Graph> Filter(const GraphTransform& step, const Graph& g, Parameters params) {
  TransformContext context;
  context.parameters = std::move(params);
  return step.Apply(g, context);
}

std::vector<std::string> Versions(const Graph& g) {
  std::vector<std::string> out;
  for (const Node& n : g.nodes()) out.push_back(n.version);
  return out;
}

// The reference's channel filter vector (the unit tests of openshift/cincinnati:
// cincinnati/src/plugins/internal/channel_filter.rs).
Graph ChannelGraph() {
  Graph g;
  const char* lists[] = {"a, c", "a, c", "b, c", "b, c"};
  for (int i = 0; i < 4; ++i) {
    g.AddNode(Node::Concrete(std::to_string(i) + ".0.0", "p", {{kChannels, lists[i]}})).value();
  }
  g.AddNode(Node::Concrete("4.0.0", "p")).value();
  EXPECT_TRUE(g.AddEdges({{0, 1}, {1, 2}, {2, 3}}).ok());
  return g;
}

TEST(ChannelFilterTest, KeepsMembersOfTheChannel) {
  Graph g = ChannelGraph();
  auto a = Filter(ChannelFilter(), g, {{"channel", "a"}});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(Versions(*a), (std::vector<std::string>{"0.0.0", "1.0.0"}));
  EXPECT_EQ(EdgeStrings(*a), Edges{"0.0.0->1.0.0"});
  auto b = Filter(ChannelFilter(), g, {{"channel", "b"}});
  EXPECT_EQ(Versions(*b), (std::vector<std::string>{"2.0.0", "3.0.0"}));
  EXPECT_EQ(EdgeStrings(*b), Edges{"2.0.0->3.0.0"});
  auto c = Filter(ChannelFilter(), g, {{"channel", "c"}});
  EXPECT_EQ(Versions(*c).size(), 4u);
  EXPECT_EQ(EdgeStrings(*c).size(), 3u);
  EXPECT_EQ(c->node(0).metadata.at(kChannels), "a, c");  // metadata untouched
  auto unknown = Filter(ChannelFilter(), g, {{"channel", "stable-9.9"}});
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->node_count(), 0u);
}

TEST(ChannelFilterTest, ValidatesTheChannelParameter) {
  for (const char* ok : {"validchannel", "validchannel-0", "validchannel-0.0"}) EXPECT_TRUE(ValidateChannel(ok).ok()) << ok;
  for (const char* bad : {"", "invalid_channel", "invalid:channel", "Stable-4.2", "fast-4 9", "a=b"}) {
    Status st = ValidateChannel(bad);
    EXPECT_EQ(st.code(), Status::Code::kInvalidParams) << bad;
  }
  auto missing = Filter(ChannelFilter(), ChannelGraph(), {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(ErrorDocument::FromStatus(missing.status()).ToJson(),
            R"({"kind":"missing_params","value":"mandatory client parameters missing: channel"})");
  auto invalid = Filter(ChannelFilter(), ChannelGraph(), {{"channel", "invalid_channel"}});
  EXPECT_EQ(ErrorDocument::FromStatus(invalid.status()).value,
            "invalid client parameters: channel 'invalid_channel' does not match regex '^[0-9a-z\\-\\.]+$'");
}

// The reference's arch filter vector (the unit test of openshift/cincinnati:
// cincinnati/src/plugins/internal/arch_filter.rs).
TEST(ArchFilterTest, KeepsOneArchAndStripsIt) {
  Graph g;
  for (const char* v : {"0.0.0+amd64", "1.0.0+amd64", "2.0.0+arm64", "3.0.0+arm64"}) {
    std::string version = v;
    g.AddNode(Node::Concrete(version, "p", {{kArch, version.substr(version.find('+') + 1)}})).value();
  }
  g.AddNode(Node::Abstract("4.0.0+arm64")).value();
  ASSERT_TRUE(g.AddEdges({{0, 1}, {2, 3}, {4, 3}}).ok());
  auto out = Filter(ArchFilter(), g, {{"arch", "arm64"}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(Versions(*out), (std::vector<std::string>{"2.0.0", "3.0.0"}));
  EXPECT_EQ(EdgeStrings(*out), Edges{"2.0.0->3.0.0"});
  for (const Node& n : out->nodes()) EXPECT_FALSE(n.metadata.count(kArch));
  auto fallback = Filter(ArchFilter(), g, {});
  EXPECT_EQ(Versions(*fallback), (std::vector<std::string>{"0.0.0", "1.0.0"}));
  EXPECT_EQ(Filter(ArchFilter(), g, {{"arch", "arrgh64"}})->node_count(), 0u);
  auto invalid = Filter(ArchFilter(), g, {{"arch", "ARM"}});
  EXPECT_EQ(ErrorDocument::FromStatus(invalid.status()).value,
            "invalid client parameters: arch 'ARM' does not match regex '^[0-9a-z]+$'");
}

TEST(ArchFilterTest, NonSemverVersionIsArchVersionError) {
  Graph g;
  g.AddNode(Node::Concrete("not-semver", "p", {{kArch, "amd64"}})).value();
  auto out = Filter(ArchFilter(), g, {});
  ASSERT_FALSE(out.ok());
  ErrorDocument doc = ErrorDocument::FromStatus(out.status());
  EXPECT_EQ(doc.kind, "arch_version_error");
  EXPECT_EQ(doc.value, "failed to process version: not-semver");
}

// A small worked example: graph builder output through both filters.
constexpr char kWorkedExample[] = R"({"nodes":[
  {"version":"4.1.0+amd64","payload":"a","metadata":{"io.openshift.upgrades.graph.release.arch":"amd64","io.openshift.upgrades.graph.release.channels":"fast-4.2"}},
  {"version":"4.1.1+amd64","payload":"b","metadata":{"io.openshift.upgrades.graph.release.arch":"amd64","io.openshift.upgrades.graph.release.channels":"fast-4.2,stable-4.2"}},
  {"version":"4.2.0+amd64","payload":"c","metadata":{"io.openshift.upgrades.graph.release.arch":"amd64","url":"u","io.openshift.upgrades.graph.release.channels":"fast-4.2,stable-4.2"}},
  {"version":"4.1.1+s390x","payload":"d","metadata":{"io.openshift.upgrades.graph.release.arch":"s390x","io.openshift.upgrades.graph.release.channels":"fast-4.2,stable-4.2"}},
  {"version":"4.1.0+s390x"}],
  "edges":[[0,1],[4,3],[1,2]],
  "conditionalEdges":[{"edges":[{"from":"4.1.0+amd64","to":"4.2.0+amd64"}],"risks":[{"url":"https://foo","name":"FooRisk","message":"m","matchingRules":[{"type":"Always"}]}]}]})";

Result<Graph> View(const char* channel, const char* arch) {
  auto g = ReadGraphJson(kWorkedExample);
  EXPECT_TRUE(g.ok()) << g.status().message();
  TransformContext context;
  context.parameters = {{"channel", channel}, {"arch", arch}};
  TransformChain chain;
  chain.push_back(std::make_unique<ChannelFilter>());
  chain.push_back(std::make_unique<ArchFilter>());
  return RunChain(chain, std::move(g).value(), context);
}

TEST(PolicyChainTest, WorkedExampleStable) {
  auto v = View("stable-4.2", "amd64");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Versions(*v), (std::vector<std::string>{"4.1.1", "4.2.0"}));
  EXPECT_EQ(EdgeStrings(*v), Edges{"4.1.1->4.2.0"});
  EXPECT_TRUE(v->conditional_edges().empty());
  EXPECT_EQ(WriteGraphJson(*v, {.schema_version = 1}).substr(0, 24), R"({"version":1,"nodes":[{")");
}

TEST(PolicyChainTest, WorkedExampleFastKeepsTheRisk) {
  auto v = View("fast-4.2", "amd64");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Versions(*v), (std::vector<std::string>{"4.1.0", "4.1.1", "4.2.0"}));
  EXPECT_EQ(EdgeStrings(*v), (Edges{"4.1.0->4.1.1", "4.1.1->4.2.0"}));
  ASSERT_EQ(v->conditional_edges().size(), 1u);
  EXPECT_EQ(v->conditional_edges()[0].edges, (std::vector<ConditionalEdgeRef>{{"4.1.0", "4.2.0"}}));
  EXPECT_EQ(v->node(2).metadata.at("url"), "u");
  auto s390x = View("fast-4.2", "s390x");
  EXPECT_EQ(Versions(*s390x), (std::vector<std::string>{"4.1.1"}));
  EXPECT_TRUE(s390x->conditional_edges().empty());
}

}  // namespace
}  // namespace cincinnati::policy
