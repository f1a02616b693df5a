#include "builder/edge_add_remove.h"

#include <gtest/gtest.h>

#include "builder/node_remove.h"
#include "builder/release_sources.h"
#include "core/graph_json.h"
#include "graph-data/file_reader.h"
#include "test_util.h"

namespace cincinnati {
namespace {

using testing::EdgeStrings;
using testing::NumberedGraph;

const std::string P = "io.openshift.upgrades.graph.";

Graph Apply(Graph g, EdgeAddRemoveSettings settings = {}) {
  TransformContext context;
  auto out = EdgeAddRemove(settings).Apply(std::move(g), context);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? std::move(out).value() : Graph();
}

using Edges = std::vector<std::string>;

// The reference's label-order vectors (the unit tests of openshift/cincinnati:
// cincinnati/src/plugins/internal/edge_add_remove.rs), nodes "i.0.0".
TEST(EdgeAddRemoveTest, PreviousRemoveList) {
  Graph g = NumberedGraph(3);
  ASSERT_TRUE(g.AddEdges({{0, 1}, {0, 2}, {1, 2}}).ok());
  g.mutable_metadata(2)[P + "previous.remove"] = "0.0.0, 1.0.0";
  EXPECT_EQ(EdgeStrings(Apply(std::move(g))), Edges{"0.0.0->1.0.0"});
}

TEST(EdgeAddRemoveTest, NextAddWithSpaces) {
  Graph g = NumberedGraph(4);
  ASSERT_TRUE(g.AddEdges({{0, 1}, {1, 2}, {2, 3}}).ok());
  g.mutable_metadata(0)[P + "next.add"] = "3.0.0 , 2.0.0";
  EXPECT_EQ(EdgeStrings(Apply(std::move(g))),
            (Edges{"0.0.0->1.0.0", "0.0.0->2.0.0", "0.0.0->3.0.0", "1.0.0->2.0.0", "2.0.0->3.0.0"}));
}

TEST(EdgeAddRemoveTest, RemovalsWinWithinOneNode) {
  Graph g = NumberedGraph(2);
  g.mutable_metadata(1)[P + "previous.add"] = "0.0.0";
  g.mutable_metadata(1)[P + "previous.remove"] = "0.0.0";
  EXPECT_TRUE(EdgeStrings(Apply(std::move(g))).empty());
}

TEST(EdgeAddRemoveTest, RemovalsWinAcrossNodes) {
  Graph g = NumberedGraph(2);
  g.mutable_metadata(0)[P + "next.add"] = "1.0.0";
  g.mutable_metadata(1)[P + "previous.remove"] = "0.0.0";
  EXPECT_TRUE(EdgeStrings(Apply(std::move(g))).empty());
  Graph h = NumberedGraph(2);
  h.mutable_metadata(1)[P + "previous.add"] = "0.0.0";
  h.mutable_metadata(0)[P + "next.remove"] = "1.0.0";
  EXPECT_TRUE(EdgeStrings(Apply(std::move(h))).empty());
}

TEST(EdgeAddRemoveTest, DuplicateAddsAndMissingRemovesAreNoOps) {
  Graph g = NumberedGraph(3);
  ASSERT_TRUE(g.AddEdge(0, 1).ok());
  g.mutable_metadata(1)[P + "previous.add"] = "0.0.0,0.0.0";
  g.mutable_metadata(0)[P + "next.add"] = "1.0.0";
  g.mutable_metadata(2)[P + "previous.remove"] = "1.0.0,9.0.0";
  g.mutable_metadata(2)[P + "next.remove"] = "0.0.0";
  EXPECT_EQ(EdgeStrings(Apply(std::move(g))), Edges{"0.0.0->1.0.0"});
}

TEST(EdgeAddRemoveTest, RemoveAllAndRegex) {
  Graph g = NumberedGraph(4);
  ASSERT_TRUE(g.AddEdges({{0, 3}, {1, 3}, {2, 3}, {0, 2}, {1, 2}, {0, 1}}).ok());
  g.mutable_metadata(3)[P + "previous.remove"] = " * ";
  g.mutable_metadata(2)[P + "previous.remove_regex"] = "^1[.]";
  EXPECT_EQ(EdgeStrings(Apply(std::move(g))), (Edges{"0.0.0->1.0.0", "0.0.0->2.0.0"}));
}

TEST(EdgeAddRemoveTest, ArchAnnotatesListedVersions) {
  auto g = ReadGraphJson(R"({"nodes":[
    {"version":"4.1.0-rc.4+amd64","payload":"a","metadata":{"io.openshift.upgrades.graph.release.arch":"amd64"}},
    {"version":"4.1.0-rc.4+s390x","payload":"b","metadata":{"io.openshift.upgrades.graph.release.arch":"s390x"}},
    {"version":"4.1.0+amd64","payload":"c","metadata":{"io.openshift.upgrades.graph.release.arch":"amd64",
      "io.openshift.upgrades.graph.previous.add":"4.1.0-rc.4"}}],"edges":[]})");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(EdgeStrings(Apply(std::move(g).value())), Edges{"4.1.0-rc.4+amd64->4.1.0+amd64"});
}

TEST(EdgeAddRemoveTest, NonSemverWithArchAndBadRegexAndCycleFail) {
  auto arch = ReadGraphJson(R"({"nodes":[{"version":"1.0.0+amd64","payload":"a","metadata":{
    "io.openshift.upgrades.graph.release.arch":"amd64","io.openshift.upgrades.graph.previous.add":"bogus"}}],"edges":[]})");
  TransformContext context;
  auto failed = EdgeAddRemove().Apply(std::move(arch).value(), context);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("'bogus'"), std::string::npos) << failed.status().message();

  Graph re = NumberedGraph(2);
  ASSERT_TRUE(re.AddEdge(0, 1).ok());
  re.mutable_metadata(1)[P + "previous.remove_regex"] = "(";
  failed = EdgeAddRemove().Apply(std::move(re), context);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("invalid regex '('"), std::string::npos);

  Graph cyc = NumberedGraph(2);
  ASSERT_TRUE(cyc.AddEdge(0, 1).ok());
  cyc.mutable_metadata(0)[P + "previous.add"] = "1.0.0";
  failed = EdgeAddRemove().Apply(std::move(cyc), context);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), Status::Code::kCycle);
}

TEST(EdgeAddRemoveTest, RemoveConsumedMetadata) {
  Graph g = NumberedGraph(2);
  g.mutable_metadata(1)[P + "previous.add"] = "0.0.0";
  g.mutable_metadata(1)["url"] = "u";
  Graph kept = Apply(g);
  EXPECT_TRUE(kept.node(1).metadata.count(P + "previous.add"));
  Graph consumed = Apply(g, {.remove_consumed_metadata = true});
  EXPECT_FALSE(consumed.node(1).metadata.count(P + "previous.add"));
  EXPECT_EQ(consumed.node(1).metadata.at("url"), "u");
  EXPECT_EQ(EdgeStrings(consumed), Edges{"0.0.0->1.0.0"});
}

// Conditional edges come from edges existing before removals, grouped by risk list.
TEST(EdgeAddRemoveTest, MaterializesRisksBeforeRemovals) {
  auto g = ReadGraphJson(R"({"nodes":[
    {"version":"4.1.0+amd64","payload":"a","metadata":{}},
    {"version":"4.1.1+amd64","payload":"b","metadata":{}},
    {"version":"4.2.0+amd64","payload":"c","metadata":{"io.openshift.upgrades.graph.previous.remove_regex":"4[.]1[.]0[+].*|4[.]1[.]1"}},
    {"version":"4.2.0+s390x","payload":"d","metadata":{}},
    {"version":"4.1.0+s390x","payload":"e","metadata":{}}],
    "edges":[[0,1],[0,2],[1,2],[4,3]]})");
  ASSERT_TRUE(g.ok());
  Risk foo{"https://foo", "Foo", "m", {MatchingRule{}}};
  Risk bar{"https://bar", "Bar", "m", {MatchingRule{MatchingRule::Type::kPromQL, "up"}}};
  g->mutable_risk_templates().push_back({"4[.]1[.]0[+].*", "4.2.0", {foo}});
  g->mutable_risk_templates().push_back({".*", "4.2.0+amd64", {bar}});
  Graph out = Apply(std::move(g).value());
  EXPECT_EQ(EdgeStrings(out), (Edges{"4.1.0+amd64->4.1.1+amd64", "4.1.0+s390x->4.2.0+s390x"}));
  EXPECT_TRUE(out.risk_templates().empty());
  ASSERT_EQ(out.conditional_edges().size(), 3u);
  // 4.1.0+amd64->4.2.0+amd64 has [Foo, Bar]; 4.1.0+s390x->4.2.0+s390x [Foo]; 4.1.1+amd64->4.2.0+amd64 [Bar].
  std::map<std::string, std::vector<std::string>> by_edge;
  for (const auto& group : out.conditional_edges()) {
    for (const auto& ref : group.edges) {
      for (const auto& r : group.risks) by_edge[ref.from + "->" + ref.to].push_back(r.name);
    }
  }
  EXPECT_EQ(by_edge["4.1.0+amd64->4.2.0+amd64"], (std::vector<std::string>{"Foo", "Bar"}));
  EXPECT_EQ(by_edge["4.1.0+s390x->4.2.0+s390x"], (std::vector<std::string>{"Foo"}));
  EXPECT_EQ(by_edge["4.1.1+amd64->4.2.0+amd64"], (std::vector<std::string>{"Bar"}));
}

// Upstream plugin fixture: many bulk removals must not corrupt edge indices.
TEST(EdgeAddRemoveTest, PluginFixtureBulkRemovals) {
  auto text = graphdata::ReadFileToString(testing::Fixtures() / "plugins/edge_add_remove_trigger_edge_index_error.json");
  ASSERT_TRUE(text.ok()) << text.status().message();
  auto g = ReadGraphJson(*text);
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->node_count(), 134u);
  ASSERT_EQ(g->edge_count(), 636u);
  Graph out = Apply(*g);
  EXPECT_EQ(out.node_count(), 134u);
  EXPECT_EQ(out.edge_count(), 561u);
  // Every node with previous.remove "*" has no incoming edge left.
  size_t starred = 0;
  for (NodeIndex i = 0; i < out.node_count(); ++i) {
    auto it = out.node(i).metadata.find(P + "previous.remove");
    if (it != out.node(i).metadata.end() && it->second == "*") {
      ++starred;
      EXPECT_TRUE(out.predecessors(i).empty()) << out.node(i).version;
    }
  }
  EXPECT_EQ(starred, 13u);
  // Indices in the serialized form are in range and consistent with the adjacency.
  auto again = ReadGraphJson(WriteGraphJson(out));
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(EdgeStrings(*again), EdgeStrings(out));
  // Every original edge that is gone was removed by a rule on its target, and every
  // edge that is new was asked for by previous.add: nothing was lost or invented.
  auto md = [&](const Graph& graph, NodeIndex i, const std::string& key) {
    auto it = graph.node(i).metadata.find(P + key);
    return it == graph.node(i).metadata.end() ? std::string() : it->second;
  };
  auto base = [](const std::string& v) { return v.substr(0, v.find('+')); };
  for (const Edge& e : g->Edges()) {
    const std::string& from = g->node(e.from).version;
    const std::string& to = g->node(e.to).version;
    bool removed = !out.HasEdge(*out.Find(from), *out.Find(to));
    std::string rule = md(*g, e.to, "previous.remove");
    bool asked = rule == "*" || (!rule.empty() && rule == base(from));
    EXPECT_EQ(removed, asked) << from << " -> " << to;
  }
  for (const Edge& e : out.Edges()) {
    const std::string& from = out.node(e.from).version;
    const std::string& to = out.node(e.to).version;
    if (g->HasEdge(*g->Find(from), *g->Find(to))) continue;
    EXPECT_NE(md(out, e.to, "previous.add").find(base(from)), std::string::npos) << from << " -> " << to;
  }
}

TEST(NodeRemoveTest, RemovesMarkedReleasesAndTheirConditionalEdges) {
  Graph g = NumberedGraph(3);
  ASSERT_TRUE(g.AddEdges({{0, 1}, {1, 2}}).ok());
  g.mutable_metadata(1)[P + "release.remove"] = "true";
  g.mutable_metadata(2)[P + "release.remove"] = "yes";
  g.mutable_conditional_edges().push_back({{{"0.0.0", "1.0.0"}}, {Risk{}}});
  TransformContext context;
  auto out = NodeRemove().Apply(std::move(g), context);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->node_count(), 2u);
  EXPECT_FALSE(out->Find("1.0.0").has_value());
  EXPECT_TRUE(out->conditional_edges().empty());
  EXPECT_TRUE(EdgeStrings(*out).empty());
}

}  // namespace
}  // namespace cincinnati
