// Brakes in the served graph (reports/brake.h) and the board that decides them
// (reports/brake_board.h): a brake is exactly what its committed blocked-edges file
// would do, and the board brakes at the rule, once, durably, and lets a person confirm
// or clear it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "core/graph_json.h"
#include "core/internal_metadata.h"
#include "core/metadata_keys.h"
#include "core/strings.h"
#include "graph-data/documents.h"
#include "graph-data/yaml_scalar.h"
#include "reports/brake.h"
#include "reports/brake_board.h"
#include "test_util.h"

namespace cincinnati::reports {
namespace {

namespace fs = std::filesystem;

// The graph with the order of conditional groups, of their risks and edges, and of the
// builder's records (blocked.by, previous.remove_regex, removed.previous) made
// canonical: the one thing a brake applied afterwards may order differently from a
// committed file.
std::string Canonical(Graph graph) {
  auto& groups = graph.mutable_conditional_edges();
  for (ConditionalEdge& g : groups) {
    std::sort(g.risks.begin(), g.risks.end(), [](const Risk& a, const Risk& b) { return a.name < b.name; });
    std::sort(g.edges.begin(), g.edges.end(), [](const auto& a, const auto& b) { return std::tie(a.from, a.to) < std::tie(b.from, b.to); });
  }
  std::sort(groups.begin(), groups.end(), [](const ConditionalEdge& a, const ConditionalEdge& b) {
    return std::tie(a.edges.front().from, a.edges.front().to) < std::tie(b.edges.front().from, b.edges.front().to);
  });
  for (const auto& [suffix, separator] : {std::pair{kBlockedBySuffix, ';'}, std::pair{kPreviousRemoveRegexSuffix, '|'},
                                          std::pair{kRemovedPreviousSuffix, ','}}) {
    const std::string key = PrefixedKey(kDefaultKeyPrefix, suffix);
    for (NodeIndex i = 0; i < graph.node_count(); ++i) {
      auto at = graph.mutable_metadata(i).find(key);
      if (at == graph.mutable_metadata(i).end()) continue;
      std::vector<std::string> items;
      for (std::string_view r : Split(at->second, separator)) items.emplace_back(r);
      std::sort(items.begin(), items.end());
      std::string joined;
      for (const std::string& r : items) joined += (joined.empty() ? "" : std::string(1, separator)) + r;
      at->second = joined;
    }
  }
  return WriteGraphJson(graph);
}

Brake ExampleBrake(const std::string& from, const std::string& to) {
  return Brake{from, to, "https://updates.example.com/v1/brakes/" + from + "-" + to,
               "Automatically blocked: 7 of 31 clusters failed.\nMost often on network.", "Evidence: a test."};
}

TEST(BrakeTest, ABrakeIsWhatItsCommittedFileWouldBe) {
  const fs::path example = testing::Examples() / "ocp-4x";
  auto built = testing::BuildLocal(example / "releases", example / "graph-data");
  ASSERT_TRUE(built.ok()) << built.status().message();
  // 4.13.1 -> 4.13.2 is recommended; 4.12.4 -> 4.13.2 is conditional already (ExampleIngressRisk).
  const std::vector<Brake> brakes = {ExampleBrake("4.13.1", "4.13.2"), ExampleBrake("4.12.4", "4.13.2")};
  Graph braked = *built;
  EXPECT_GE(ApplyBrakes(braked, brakes, kDefaultKeyPrefix), 2u);

  testing::TempDir dir;
  fs::copy(example / "graph-data", dir / "graph-data", fs::copy_options::recursive);
  for (const Brake& b : brakes) testing::WriteFile(dir / "graph-data" / BrakeFileName(b.from, b.to), BrakeFileYaml(b));
  auto committed = testing::BuildLocal(example / "releases", dir / "graph-data");
  ASSERT_TRUE(committed.ok()) << committed.status().message();
  EXPECT_EQ(Canonical(braked), Canonical(*committed));
  EXPECT_NE(Canonical(braked), Canonical(*built));
}

TEST(BrakeTest, EveryArchOfTheEdgeIsBrakedAndOtherEdgesAreNot) {
  Graph g;
  for (const char* v : {"4.13.1+amd64", "4.13.2+amd64", "4.13.1+arm64", "4.13.2+arm64", "4.13.0+amd64"}) {
    ASSERT_TRUE(g.AddNode(Node::Concrete(v, std::string("quay.io/r@sha256:") + v)).ok());
  }
  auto at = [&](const char* v) { return *g.Find(v); };
  ASSERT_TRUE(g.AddEdges({{at("4.13.1+amd64"), at("4.13.2+amd64")}, {at("4.13.1+arm64"), at("4.13.2+arm64")},
                          {at("4.13.0+amd64"), at("4.13.2+amd64")}}).ok());
  EXPECT_EQ(ApplyBrakes(g, {ExampleBrake("4.13.1", "4.13.2")}, kDefaultKeyPrefix), 2u);
  EXPECT_EQ(g.edge_count(), 1u) << "4.13.0 -> 4.13.2 stays recommended";
  ASSERT_EQ(g.conditional_edges().size(), 1u);
  const ConditionalEdge& group = g.conditional_edges()[0];
  EXPECT_EQ(group.edges, (std::vector<ConditionalEdgeRef>{{"4.13.1+amd64", "4.13.2+amd64"}, {"4.13.1+arm64", "4.13.2+arm64"}}));
  ASSERT_EQ(group.risks.size(), 1u);
  EXPECT_EQ(group.risks[0].name, "AutomaticallyBlocked_4_13_1_to_4_13_2");
  EXPECT_EQ(group.risks[0].matching_rules, (std::vector<MatchingRule>{{MatchingRule::Type::kAlways, ""}}));
  EXPECT_EQ(BrakeFileName("4.13.1", "4.13.2"), "blocked-edges/4.13.2-AutomaticallyBlocked_4_13_1_to_4_13_2.yaml");
  EXPECT_EQ(BrakeFromRegex("4.13.1"), "^4[.]13[.]1([+].*)?$");
  // Applied twice (a republish of a braked graph), nothing changes.
  Graph again = g;
  EXPECT_EQ(ApplyBrakes(again, {ExampleBrake("4.13.1", "4.13.2")}, kDefaultKeyPrefix), 2u);
  EXPECT_EQ(WriteGraphJson(again), WriteGraphJson(g));
}

TEST(BrakeTest, TheFileReadsAsAGraphDataConditionalBlock) {
  const Brake b = ExampleBrake("4.13.1", "4.13.2");
  const std::string yaml = BrakeFileYaml(b);
  auto doc = graphdata::ParseYaml(yaml);
  ASSERT_TRUE(doc.ok()) << doc.status().message() << "\n" << yaml;
  auto block = graphdata::DecodeConditionalBlock(*doc);
  ASSERT_TRUE(block.ok()) << block.status().message() << "\n" << yaml;
  EXPECT_EQ(block->to.ToString(), "4.13.2");
  EXPECT_EQ(block->from, "^4[.]13[.]1([+].*)?$");
  EXPECT_EQ(block->risk.name, "AutomaticallyBlocked_4_13_1_to_4_13_2");
  EXPECT_EQ(block->risk.message, b.message);
  EXPECT_EQ(block->risk.url, b.url);
  EXPECT_EQ(yaml.rfind("# Evidence: a test.\n", 0), 0u) << yaml;
}

}  // namespace
}  // namespace cincinnati::reports
