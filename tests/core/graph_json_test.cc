#include "core/graph_json.h"

#include <gtest/gtest.h>

#include "core/error_document.h"
#include "test_util.h"

namespace cincinnati {
namespace {

using testing::NumberedGraph;

// The reference's serialization vectors (openshift/cincinnati: cincinnati/src/lib.rs tests).
constexpr char kNodes[] =
    R"("nodes":[{"version":"1.0.0","payload":"image/1.0.0","metadata":{}},)"
    R"({"version":"2.0.0","payload":"image/2.0.0","metadata":{}},)"
    R"({"version":"3.0.0","payload":"image/3.0.0","metadata":{}}])";

Graph ThreeReleases() {
  Graph g;
  for (const char* v : {"1.0.0", "2.0.0", "3.0.0"}) g.AddNode(Node::Concrete(v, std::string("image/") + v)).value();
  EXPECT_TRUE(g.AddEdges({{0, 1}, {1, 2}, {0, 2}}).ok());
  return g;
}

TEST(GraphJsonTest, SerializesWithoutConditionalEdgesKeyWhenAbsent) {
  Graph g = ThreeReleases();
  g.set_conditional_edges_present(false);
  EXPECT_EQ(WriteGraphJson(g), std::string("{") + kNodes + R"(,"edges":[[0,1],[1,2],[0,2]]})");
}

TEST(GraphJsonTest, SerializesEmptyConditionalEdges) {
  Graph g = ThreeReleases();
  EXPECT_EQ(WriteGraphJson(g), std::string("{") + kNodes + R"(,"edges":[[0,1],[1,2],[0,2]],"conditionalEdges":[]})");
}

TEST(GraphJsonTest, SerializesPromQLRisk) {
  Graph g = ThreeReleases();
  g.mutable_conditional_edges().push_back(ConditionalEdge{
      {{"1.0.0", "2.0.0"}},
      {Risk{"https://bug.example.com/show_bug.cgi?id=example", "BrokenUpdates", "Updates are broken for this provider",
            {MatchingRule{MatchingRule::Type::kPromQL, "cluster_infrastructure_provider{type=\"CloudProvider\"}"}}}}});
  EXPECT_EQ(WriteGraphJson(g),
            std::string("{") + kNodes +
                R"(,"edges":[[0,1],[1,2],[0,2]],"conditionalEdges":[{"edges":[{"from":"1.0.0","to":"2.0.0"}],)"
                R"("risks":[{"url":"https://bug.example.com/show_bug.cgi?id=example","name":"BrokenUpdates",)"
                R"("message":"Updates are broken for this provider","matchingRules":[{"type":"PromQL","promql":)"
                R"({"promql":"cluster_infrastructure_provider{type=\"CloudProvider\"}"}}]}]}]})");
}

TEST(GraphJsonTest, SerializesAlwaysRisk) {
  Graph g = ThreeReleases();
  g.mutable_conditional_edges().push_back(
      ConditionalEdge{{{"1.0.0", "2.0.0"}}, {Risk{"u", "n", "m", {MatchingRule{MatchingRule::Type::kAlways, ""}}}}});
  EXPECT_NE(WriteGraphJson(g).find(R"("matchingRules":[{"type":"Always"}])"), std::string::npos);
}

TEST(GraphJsonTest, RoundTripsByteIdentically) {
  for (std::string doc : {
           std::string("{") + kNodes + R"(,"edges":[[0,1],[1,2],[0,2]],"conditionalEdges":[]})",
           std::string("{") + kNodes + R"(,"edges":[[0,1],[1,2],[0,2]]})",
           std::string(R"({"nodes":[{"version":"4.2.0+amd64","payload":"p","metadata":{"a":"1","b":"x\"y\\z\n\u0001"}},)"
                       R"({"version":"4.1.0+amd64"}],"edges":[[1,0]],"conditionalEdges":[{"edges":[{"from":"4.1.0+amd64",)"
                       R"("to":"4.2.0+amd64"}],"risks":[{"url":"u","name":"N","message":"m","matchingRules":[{"type":"Always"},)"
                       R"({"type":"PromQL","promql":{"promql":"up == 1"}}]}]}]})"),
       }) {
    auto g = ReadGraphJson(doc);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(WriteGraphJson(*g), doc);
  }
}

TEST(GraphJsonTest, WritesVersionedForm) {
  Graph g = NumberedGraph(0);
  EXPECT_EQ(WriteGraphJson(g, {.schema_version = 1}), R"({"version":1,"nodes":[],"edges":[],"conditionalEdges":[]})");
  auto again = ReadGraphJson(R"({"version":1,"nodes":[],"edges":[],"conditionalEdges":[]})");
  EXPECT_TRUE(again.ok());
  EXPECT_FALSE(ReadGraphJson(R"({"version":1,"nodes":[],"edges":[]})", {.allow_version_key = false}).ok());
}

TEST(GraphJsonTest, EscapesLikeSerdeJson) {
  Graph g;
  g.AddNode(Node::Concrete("1.0.0", "p", {{"k", std::string("\t\b\f\r/\x7f\xc3\xa9\x1f", 9)}})).value();
  EXPECT_NE(WriteGraphJson(g).find(R"("k":"\t\b\f\r/)" "\x7f\xc3\xa9" R"(\u001f")"), std::string::npos)
      << WriteGraphJson(g);
}

struct BadInput {
  const char* json;
  const char* needle;  // the error must name this
};

TEST(GraphJsonTest, RejectsInvalidDocumentsWithClearErrors) {
  for (const BadInput& c : std::vector<BadInput>{
           {"", "invalid JSON"},
           {"[]", "object"},
           {R"({"edges":[]})", "missing 'nodes'"},
           {R"({"nodes":[]})", "missing 'edges'"},
           {R"({"nodes":[],"edges":[],"extra":1})", "unknown top-level key 'extra'"},
           {R"({"nodes":[{"version":""}],"edges":[]})", "nodes[0]"},
           {R"({"nodes":[{"version":"1.0.0"},{"version":"1.0.0"}],"edges":[]})", "duplicate node version '1.0.0'"},
           {R"({"nodes":[{"version":"1.0.0","payload":"p"}],"edges":[]})", "both 'payload' and 'metadata'"},
           {R"({"nodes":[{"version":"1.0.0","payload":"p","metadata":{"a":1}}],"edges":[]})", "metadata 'a'"},
           {R"({"nodes":[{"version":"1.0.0"}],"edges":[[0,1]]})", "edges[0]: [0, 1] is out of range"},
           {R"({"nodes":[{"version":"1.0.0"}],"edges":[[0,-1]]})", "edges[0]"},
           {R"({"nodes":[{"version":"1.0.0"}],"edges":[[0]]})", "edges[0]"},
           {R"({"nodes":[{"version":"1.0.0"},{"version":"2.0.0"}],"edges":[[0,1],[1,0]]})",
            "1.0.0 -> 2.0.0 -> 1.0.0"},
           {R"({"nodes":[],"edges":[],"conditionalEdges":[{"risks":[{"matchingRules":[{"type":"Sometimes"}]}]}]})",
            "unknown matching rule type 'Sometimes'"},
       }) {
    auto g = ReadGraphJson(c.json);
    ASSERT_FALSE(g.ok()) << c.json;
    EXPECT_NE(g.status().message().find(c.needle), std::string::npos) << c.json << " -> " << g.status().message();
  }
}

TEST(GraphJsonTest, ConditionalEdgeKeysDefaultToEmpty) {
  auto g = ReadGraphJson(R"({"nodes":[],"edges":[],"conditionalEdges":[{"edges":[{"from":"a"}],"risks":[{}]}]})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->conditional_edges().size(), 1u);
  EXPECT_EQ(g->conditional_edges()[0].edges[0].to, "");
  EXPECT_EQ(g->conditional_edges()[0].risks[0].name, "");
}

TEST(ErrorDocumentTest, MapsStatusToReferenceKinds) {
  ErrorDocument missing = ErrorDocument::FromStatus(Status::MissingParams("channel"));
  EXPECT_EQ(missing.ToJson(), R"({"kind":"missing_params","value":"mandatory client parameters missing: channel"})");
  EXPECT_EQ(missing.http_status, 400);
  ErrorDocument invalid = ErrorDocument::FromStatus(Status::InvalidParams("arch 'X' does not match regex"));
  EXPECT_EQ(invalid.kind, "invalid_params");
  EXPECT_EQ(invalid.value, "invalid client parameters: arch 'X' does not match regex");
  ErrorDocument arch = ErrorDocument::FromStatus(Status::ArchVersion("bogus"));
  EXPECT_EQ(arch.kind, "arch_version_error");
  EXPECT_EQ(arch.http_status, 500);
  auto parsed = ErrorDocument::Parse(missing.ToJson());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, missing);
  EXPECT_FALSE(ErrorDocument::Parse("{}").ok());
}

}  // namespace
}  // namespace cincinnati
