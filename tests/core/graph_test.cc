#include "core/graph.h"

#include <random>

#include <gtest/gtest.h>

#include "test_util.h"

namespace cincinnati {
namespace {

using testing::EdgeStrings;
using testing::NumberedGraph;

TEST(GraphTest, NodesAreFoundByExactVersion) {
  Graph g;
  NodeIndex a = g.AddNode(Node::Concrete("4.2.0+amd64", "p", {{"k", "v"}})).value();
  NodeIndex b = g.AddNode(Node::Abstract("4.1.0+amd64")).value();
  EXPECT_EQ(g.Find("4.2.0+amd64"), a);
  EXPECT_EQ(g.Find("4.1.0+amd64"), b);
  EXPECT_FALSE(g.Find("4.2.0").has_value());
  EXPECT_TRUE(g.node(a).concrete);
  EXPECT_FALSE(g.node(b).concrete);
}

TEST(GraphTest, DuplicateVersionIsRefused) {
  Graph g;
  ASSERT_TRUE(g.AddNode(Node::Concrete("1.0.0", "a")).ok());
  auto dup = g.AddNode(Node::Concrete("1.0.0", "b"));
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("1.0.0"), std::string::npos);
  EXPECT_FALSE(g.AddNode(Node::Abstract("")).ok());
}

TEST(GraphTest, EdgesKeepInsertionOrderAndIgnoreDuplicates) {
  Graph g = NumberedGraph(3);
  ASSERT_TRUE(g.AddEdge(0, 1).ok());
  ASSERT_TRUE(g.AddEdge(1, 2).ok());
  ASSERT_TRUE(g.AddEdge(0, 2).ok());
  ASSERT_TRUE(g.AddEdge(0, 1).ok());
  EXPECT_EQ(g.edge_count(), 3u);
  std::vector<Edge> expected{{0, 1}, {1, 2}, {0, 2}};
  EXPECT_EQ(g.Edges(), expected);
  EXPECT_TRUE(g.RemoveEdge(1, 2));
  EXPECT_FALSE(g.RemoveEdge(1, 2));
  expected = {{0, 1}, {0, 2}};
  EXPECT_EQ(g.Edges(), expected);
}

TEST(GraphTest, CycleIsRefusedNamingItsVersions) {
  Graph g = NumberedGraph(4);
  ASSERT_TRUE(g.AddEdge(0, 1).ok());
  ASSERT_TRUE(g.AddEdge(1, 2).ok());
  ASSERT_TRUE(g.AddEdge(2, 3).ok());
  Status st = g.AddEdge(3, 1);
  ASSERT_EQ(st.code(), Status::Code::kCycle);
  EXPECT_NE(st.message().find("3.0.0 -> 1.0.0 -> 2.0.0 -> 3.0.0"), std::string::npos) << st.message();
  EXPECT_FALSE(g.HasEdge(3, 1));
  EXPECT_EQ(g.AddEdge(2, 2).code(), Status::Code::kCycle);
  EXPECT_EQ(g.AddEdge(3, 0).code(), Status::Code::kCycle);
  // Edges against insertion order are fine as long as they close no cycle.
  Graph h = NumberedGraph(3);
  EXPECT_TRUE(h.AddEdge(2, 1).ok());
  EXPECT_TRUE(h.AddEdge(1, 0).ok());
  EXPECT_EQ(h.AddEdge(0, 2).code(), Status::Code::kCycle);
}

TEST(GraphTest, BulkAddRefusesCycleAndAddsNothing) {
  Graph g = NumberedGraph(3);
  ASSERT_TRUE(g.AddEdge(0, 1).ok());
  Status st = g.AddEdges({{1, 2}, {2, 0}});
  ASSERT_EQ(st.code(), Status::Code::kCycle);
  EXPECT_NE(st.message().find("0.0.0 -> 1.0.0 -> 2.0.0 -> 0.0.0"), std::string::npos) << st.message();
  EXPECT_EQ(EdgeStrings(g), std::vector<std::string>{"0.0.0->1.0.0"});
  // After a refused bulk add, single adds still detect cycles correctly.
  ASSERT_TRUE(g.AddEdges({{1, 2}}).ok());
  EXPECT_EQ(g.AddEdge(2, 0).code(), Status::Code::kCycle);
  EXPECT_FALSE(g.AddEdges({{0, 7}}).ok());
}

// Random DAG insertions: every edge either keeps the graph acyclic (checked by brute
// force reachability) or is refused exactly when it would close a cycle.
TEST(GraphTest, IncrementalCycleDetectionAgreesWithReachability) {
  std::mt19937 rng(42);
  for (int round = 0; round < 20; ++round) {
    const int n = 30;
    Graph g = NumberedGraph(n);
    for (int k = 0; k < 200; ++k) {
      NodeIndex a = rng() % n, b = rng() % n;
      // Brute force: does b reach a?
      std::vector<char> seen(n);
      std::vector<NodeIndex> stack{b};
      seen[b] = 1;
      bool reaches = false;
      while (!stack.empty()) {
        NodeIndex x = stack.back();
        stack.pop_back();
        if (x == a) reaches = true;
        for (NodeIndex s : g.successors(x)) {
          if (!seen[s]) seen[s] = 1, stack.push_back(s);
        }
      }
      Status st = g.AddEdge(a, b);
      EXPECT_EQ(st.ok(), !reaches) << a << "->" << b << " " << st.message();
    }
  }
}

TEST(GraphTest, RetainKeepsOrderAndTrimsConditionalEdges) {
  Graph g = NumberedGraph(4);
  ASSERT_TRUE(g.AddEdges({{0, 1}, {1, 2}, {2, 3}, {0, 3}}).ok());
  g.mutable_conditional_edges().push_back({{{"0.0.0", "2.0.0"}, {"1.0.0", "3.0.0"}}, {Risk{"u", "R", "m", {}}}});
  g.mutable_conditional_edges().push_back({{{"2.0.0", "3.0.0"}}, {Risk{"u", "S", "m", {}}}});
  Graph r = g.Retain([](NodeIndex i) { return i != 1; });
  ASSERT_EQ(r.node_count(), 3u);
  EXPECT_EQ(r.node(0).version, "0.0.0");
  EXPECT_EQ(r.node(1).version, "2.0.0");
  EXPECT_EQ(EdgeStrings(r), (std::vector<std::string>{"0.0.0->3.0.0", "2.0.0->3.0.0"}));
  ASSERT_EQ(r.conditional_edges().size(), 2u);
  EXPECT_EQ(r.conditional_edges()[0].edges, (std::vector<ConditionalEdgeRef>{{"0.0.0", "2.0.0"}}));
  // The retained graph still refuses cycles.
  EXPECT_EQ(r.AddEdge(2, 0).code(), Status::Code::kCycle);
}

TEST(GraphTest, RenameAllIsAtomic) {
  Graph g = NumberedGraph(2);
  EXPECT_FALSE(g.RenameAll({"x", "x"}).ok());
  EXPECT_EQ(g.node(0).version, "0.0.0");
  ASSERT_TRUE(g.RenameAll({"a", "b"}).ok());
  EXPECT_EQ(g.Find("b"), 1u);
  EXPECT_FALSE(g.Find("1.0.0").has_value());
}

}  // namespace
}  // namespace cincinnati
