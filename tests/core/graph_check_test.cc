#include "core/graph_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/graph_json.h"
#include "core/strings.h"
#include "test_util.h"

namespace cincinnati {
namespace {

Graph TwoReleases() {
  Graph g;
  NodeIndex a = g.AddNode(Node::Concrete("4.1.0", "quay.io/a@sha256:1", {{"k", "v"}})).value();
  NodeIndex b = g.AddNode(Node::Concrete("4.1.1+amd64", "quay.io/a@sha256:2")).value();
  EXPECT_TRUE(g.AddEdge(a, b).ok());
  return g;
}

Risk OneRisk() { return Risk{"https://example.com", "Bug", "broken", {MatchingRule{}}}; }

std::string Refusal(const Graph& g) {
  Status s = CheckServable(g);
  return s.ok() ? "" : s.message();
}

TEST(GraphCheckTest, AcceptsAGoodGraphWithConditionalEdges) {
  Graph g = TwoReleases();
  g.mutable_conditional_edges().push_back({{{"4.1.0", "4.1.1+amd64"}}, {OneRisk()}});
  EXPECT_TRUE(CheckServable(g).ok()) << Refusal(g);
  EXPECT_TRUE(CheckServable(Graph()).ok());
}

TEST(GraphCheckTest, RefusesVersionsThatAreNotStrictSemVer) {
  for (const char* bad : {"4.1", "v4.1.2", "04.1.2", "4.1.2-", "4.1.2+a..b", "latest"}) {
    Graph g = TwoReleases();
    ASSERT_TRUE(g.AddNode(Node::Concrete(bad, "p")).ok());
    EXPECT_NE(Refusal(g).find(std::string("node 2 ('") + bad + "'): not a SemVer version"), std::string::npos) << bad;
  }
}

TEST(GraphCheckTest, RefusesInvalidUtf8Anywhere) {
  Graph g = TwoReleases();
  g.mutable_metadata(0)["url"] = "http://x/\xff";
  EXPECT_NE(Refusal(g).find("node 0 ('4.1.0'): metadata key or value is not valid UTF-8"), std::string::npos);
  Graph h = TwoReleases();
  ASSERT_TRUE(h.ReplaceNode(1, Node::Concrete("4.1.1+amd64", "quay.io/\xc0\xaf")).ok());
  EXPECT_NE(Refusal(h).find("payload is not valid UTF-8"), std::string::npos);
}

TEST(GraphCheckTest, RefusesConditionalEdgesToMissingNodesOrWithoutRisks) {
  Graph g = TwoReleases();
  g.mutable_conditional_edges().push_back({{{"4.1.0", "4.9.9"}}, {OneRisk()}});
  EXPECT_NE(Refusal(g).find("conditional edge 4.1.0 -> 4.9.9 (group 0): '4.9.9' is not a node"), std::string::npos);
  Graph h = TwoReleases();
  h.mutable_conditional_edges().push_back({{{"4.1.0", "4.1.1+amd64"}}, {}});
  EXPECT_NE(Refusal(h).find("group 0 has no risks"), std::string::npos);
  Graph i = TwoReleases();
  Risk unruled = OneRisk();
  unruled.matching_rules.clear();
  i.mutable_conditional_edges().push_back({{{"4.1.0", "4.1.1+amd64"}}, {unruled}});
  EXPECT_NE(Refusal(i).find("risk 'Bug' has no matching rules"), std::string::npos);
}

TEST(StringsTest, FailureCauseIgnoresNumbers) {
  EXPECT_EQ(FailureCause("timed out after 1001 ms"), FailureCause("timed out after 1000 ms"));
  EXPECT_EQ(FailureCause("edge [1, 77]"), "edge [#, #]");
  EXPECT_NE(FailureCause("HTTP 500"), FailureCause("HTTP timeout"));
}

TEST(GraphCheckTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xc3"));              // truncated
  EXPECT_FALSE(IsValidUtf8("\xc0\x80"));          // overlong NUL
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\x80"));              // lone continuation
  // Lossy repair, one U+FFFD per maximal ill-formed subpart (Rust's from_utf8_lossy).
  EXPECT_EQ(ToValidUtf8("ok"), "ok");
  EXPECT_EQ(ToValidUtf8("a\xF0\x9F\x98" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(ToValidUtf8("\xC0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(ToValidUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_TRUE(IsValidUtf8(ToValidUtf8("\xff\xfe\xf4\x90\x80\x80\xe2\x82")));
}

// Real graphs pass: the reference's golden policy-engine answers and the raw
// graph-builder graphs of the secondary-metadata fixtures.
TEST(GraphCheckTest, UpstreamFixturesAreServable) {
  namespace fs = std::filesystem;
  size_t checked = 0;
  for (const auto& f : fs::recursive_directory_iterator(CINCINNATI_FIXTURES)) {
    const std::string name = f.path().filename().string();
    if (f.path().extension() != ".json" || name == "metadata.json" || name == "message.json") continue;
    std::ifstream in(f.path());
    std::stringstream text;
    text << in.rdbuf();
    auto graph = ReadGraphJson(text.str());
    ASSERT_TRUE(graph.ok()) << f.path() << ": " << graph.status().message();
    Status s = CheckServable(*graph);
    EXPECT_TRUE(s.ok()) << f.path() << ": " << s.message();
    ++checked;
  }
  EXPECT_GE(checked, 11u);
}

TEST(GraphCheckTest, TheGraphReaderRefusesWhatTheCheckWouldCatchToo) {
  // The policy engine reads upstream JSON before checking it: out-of-range edges and
  // duplicate versions never get that far.
  EXPECT_FALSE(ReadGraphJson(R"({"nodes":[{"version":"1.0.0","payload":"p","metadata":{}}],"edges":[[0,5]]})").ok());
  EXPECT_FALSE(ReadGraphJson(R"({"nodes":[{"version":"1.0.0","payload":"p","metadata":{}},)"
                             R"({"version":"1.0.0","payload":"q","metadata":{}}],"edges":[]})").ok());
  EXPECT_FALSE(ReadGraphJson(R"({"nodes":[{"version":"1.0.0","payload":"p","metadata":{"a":1}}],"edges":[]})").ok());
}

}  // namespace
}  // namespace cincinnati
