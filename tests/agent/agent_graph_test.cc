// The agent's reading of update graphs (as the CVO reads them), on the upstream golden
// answers and on hand-made ones.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/graph_json.h"
#include "graph_client/available_updates.h"
#include "graph_client/graph_request.h"
#include "graph_client/update_graph.h"
#include "test_util.h"

namespace cincinnati::graph_client {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

UpdatesOrFailure Compute(std::string_view json, std::string_view version, bool desired_multi = false) {
  auto graph = ParseUpdateGraph(json);
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  if (!graph.ok()) return {};
  return ComputeAvailableUpdates(*graph, {*Version::Parse(version), desired_multi, false}, "stable-4.1");
}

std::vector<std::string> Versions(const std::vector<Release>& releases) {
  std::vector<std::string> out;
  for (const auto& r : releases) out.push_back(r.version);
  return out;
}

std::vector<std::string> Versions(const std::vector<ConditionalUpdate>& updates) {
  std::vector<std::string> out;
  for (const auto& u : updates) out.push_back(u.release.version);
  return out;
}

// What a cluster at `from` is offered, worked out with the graph builder's own graph
// reader rather than the agent's: edge targets, and conditional edges from `from`,
// recommended copies of a conditional image dropped.
struct Expected {
  std::set<std::pair<std::string, std::string>> recommended;                   // (version, image)
  std::map<std::string, std::vector<std::string>> conditional_risk_names;     // version -> risk names
};

Expected ExpectedFor(const Graph& graph, NodeIndex from) {
  Expected out;
  const auto& nodes = graph.nodes();
  std::set<std::string> conditional_images;
  for (const auto& set : graph.conditional_edges()) {
    for (const auto& edge : set.edges) {
      if (edge.from != nodes[from].version) continue;
      for (const auto& node : nodes) {
        if (node.version != edge.to) continue;
        conditional_images.insert(node.payload);
        for (const auto& risk : set.risks) out.conditional_risk_names[node.version].push_back(risk.name);
        break;
      }
    }
  }
  for (const Edge& e : graph.Edges()) {
    if (e.from == from && !conditional_images.count(nodes[e.to].payload)) {
      out.recommended.insert({nodes[e.to].version, nodes[e.to].payload});
    }
  }
  return out;
}

TEST(AgentGraphTest, GoldenAnswersReadLikeTheClusterVersionOperator) {
  size_t files = 0, clusters = 0, conditional_seen = 0, recommended_seen = 0;
  for (const auto& entry : fs::directory_iterator(testing::Fixtures() / "policy-engine-golden")) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    std::string json = ReadAll(entry.path());
    auto reference = ReadGraphJson(json);
    ASSERT_TRUE(reference.ok()) << entry.path() << ": " << reference.status().ToString();
    auto graph = ParseUpdateGraph(json);
    ASSERT_TRUE(graph.ok()) << entry.path() << ": " << graph.status().ToString();
    ASSERT_EQ(graph->nodes.size(), reference->nodes().size());
    for (NodeIndex i = 0; i < reference->nodes().size(); ++i) {
      const Node& node = reference->nodes()[i];
      auto got = ComputeAvailableUpdates(*graph, {*Version::Parse(node.version), false, false}, "golden");
      ASSERT_TRUE(got.ok()) << entry.path() << " " << node.version << ": " << got.failure.message;
      ++clusters;
      Expected want = ExpectedFor(*reference, i);

      std::set<std::pair<std::string, std::string>> recommended;
      for (const auto& r : got.updates.recommended) recommended.insert({r.version, r.image});
      EXPECT_EQ(recommended, want.recommended) << entry.path() << " from " << node.version;
      EXPECT_EQ(recommended.size(), got.updates.recommended.size()) << "no duplicates";
      std::map<std::string, std::vector<std::string>> conditional;
      for (const auto& u : got.updates.conditional) {
        for (const auto& risk : u.risks) conditional[u.release.version].push_back(risk.name);
      }
      EXPECT_EQ(conditional, want.conditional_risk_names) << entry.path() << " from " << node.version;
      recommended_seen += recommended.size();
      conditional_seen += got.updates.conditional.size();

      // Newest first, as status shows them.
      auto descending = [](const auto& list, auto version_of) {
        for (size_t k = 1; k < list.size(); ++k) {
          if (Version::Parse(version_of(list[k - 1]))->Compare(*Version::Parse(version_of(list[k]))) < 0) return false;
        }
        return true;
      };
      EXPECT_TRUE(descending(got.updates.recommended, [](const Release& r) { return r.version; }));
      EXPECT_TRUE(descending(got.updates.conditional, [](const ConditionalUpdate& u) { return u.release.version; }));

      // The current node's metadata fills status.desired.
      EXPECT_EQ(got.updates.current.image, node.payload);
      auto channels = node.metadata.find("io.openshift.upgrades.graph.release.channels");
      if (channels != node.metadata.end()) {
        EXPECT_TRUE(std::is_sorted(got.updates.current.channels.begin(), got.updates.current.channels.end()));
        EXPECT_EQ(got.updates.current.channels.size(),
                  static_cast<size_t>(std::count(channels->second.begin(), channels->second.end(), ',') + 1));
      }
    }
  }
  EXPECT_EQ(files, 7u);
  EXPECT_GT(clusters, 500u);
  EXPECT_GT(recommended_seen, 10000u);
  EXPECT_GT(conditional_seen, 10u);  // stable-4.7 and 4.8 carry conditional edges
}

constexpr std::string_view kSmall = R"({
  "version": 1,
  "nodes": [
    {"version": "4.1.0", "payload": "r@sha256:0", "metadata": {"io.openshift.upgrades.graph.release.channels": "stable-4.1,fast-4.1", "url": "https://example.com/4.1.0"}},
    {"version": "4.1.1", "payload": "r@sha256:1", "metadata": {}},
    {"version": "4.1.2", "payload": "r@sha256:2"},
    {"version": "4.1.3", "payload": "r@sha256:3", "metadata": null},
    {"version": "4.1.4", "payload": "r@sha256:4", "metadata": {"size": 12}}
  ],
  "edges": [[0, 1], [0, 2], [0, 3], [1, 2]],
  "conditionalEdges": [
    {"edges": [{"from": "4.1.0", "to": "4.1.3"}, {"from": "4.1.0", "to": "4.1.4"}],
     "risks": [{"url": "https://example.com/risk", "name": "SomeRisk", "message": "Something breaks.",
                "matchingRules": [{"type": "PromQL", "promql": {"promql": "cluster_infrastructure_provider{type=\"AWS\"}"}}]}]}
  ]
})";

TEST(AgentGraphTest, RecommendedAndConditionalUpdates) {
  auto got = Compute(kSmall, "4.1.0");
  ASSERT_TRUE(got.ok()) << got.failure.message;
  EXPECT_EQ(Versions(got.updates.recommended), (std::vector<std::string>{"4.1.2", "4.1.1"}));  // 4.1.3 is conditional
  EXPECT_EQ(Versions(got.updates.conditional), (std::vector<std::string>{"4.1.4", "4.1.3"}));
  EXPECT_EQ(got.updates.conditional[0].risks[0].name, "SomeRisk");
  EXPECT_EQ(got.updates.current.channels, (std::vector<std::string>{"fast-4.1", "stable-4.1"}));
  EXPECT_EQ(got.updates.current.url, "https://example.com/4.1.0");

  // Build metadata does not matter for finding the current node.
  EXPECT_TRUE(Compute(kSmall, "4.1.1+abc").ok());
  auto at_last = Compute(kSmall, "4.1.4");
  ASSERT_TRUE(at_last.ok());
  EXPECT_TRUE(at_last.updates.recommended.empty());
}

TEST(AgentGraphTest, VersionNotInTheChannel) {
  auto got = Compute(kSmall, "4.2.0");
  EXPECT_EQ(got.failure.reason, "VersionNotFound");
  EXPECT_EQ(got.failure.message, "currently reconciling cluster version 4.2.0 not found in the \"stable-4.1\" channel");
}

TEST(AgentGraphTest, MultiArchMigrationOffersTheCurrentVersionOnly) {
  auto got = Compute(kSmall, "4.1.0", /*desired_multi=*/true);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(Versions(got.updates.recommended), (std::vector<std::string>{"4.1.0"}));
  EXPECT_TRUE(got.updates.conditional.empty());
}

std::string WithConditional(std::string_view conditional_edges) {
  return fmt::format(R"({{"nodes": [{{"version": "1.0.0", "payload": "a"}}, {{"version": "1.1.0", "payload": "b"}},
    {{"version": "1.2.0", "payload": "c"}}], "edges": [[0, 1]], "conditionalEdges": {}}})",
                     conditional_edges);
}

constexpr std::string_view kRisk = R"({"url": "https://x", "name": "R", "message": "m", "matchingRules": [{"type": "Always"}]})";

TEST(AgentGraphTest, ConditionalRulesArePrunedAsTheOperatorDoes) {
  // Unknown rule types and malformed rules are dropped; a risk left without a rule
  // drops its conditional update.
  std::string pruned = WithConditional(fmt::format(
      R"([{{"edges": [{{"from": "1.0.0", "to": "1.2.0"}}], "risks": [{{"url": "https://x", "name": "R", "message": "m",
          "matchingRules": [{{"type": "Future"}}, {{"type": "Always", "promql": {{"promql": "1"}}}}, {{"type": "PromQL"}},
                            {{"type": "PromQL", "promql": {{"promql": "up"}}}}]}}]}}])"));
  auto got = Compute(pruned, "1.0.0");
  ASSERT_TRUE(got.ok()) << got.failure.message;
  ASSERT_EQ(got.updates.conditional.size(), 1u);
  ASSERT_EQ(got.updates.conditional[0].risks[0].matching_rules.size(), 1u);
  EXPECT_EQ(got.updates.conditional[0].risks[0].matching_rules[0].promql, "up");

  std::string dropped = WithConditional(
      R"([{"edges": [{"from": "1.0.0", "to": "1.2.0"}], "risks": [{"url": "https://x", "name": "R", "message": "m",
          "matchingRules": [{"type": "PromQL", "promql": {"promql": ""}}]}]}])");
  got = Compute(dropped, "1.0.0");
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got.updates.conditional.empty());
  EXPECT_EQ(Versions(got.updates.recommended), (std::vector<std::string>{"1.1.0"}));
}

TEST(AgentGraphTest, TwoConditionalEntriesForOneImageDropBoth) {
  std::string twice = WithConditional(fmt::format(
      R"([{{"edges": [{{"from": "1.0.0", "to": "1.1.0"}}], "risks": [{0}]}},
          {{"edges": [{{"from": "1.0.0", "to": "1.1.0"}}, {{"from": "1.0.0", "to": "1.2.0"}}], "risks": [{0}]}}])",
      kRisk));
  auto got = Compute(twice, "1.0.0");
  ASSERT_TRUE(got.ok()) << got.failure.message;
  // 1.1.0 was also a recommended edge: its recommended copy went first, then both
  // conditional copies; 1.2.0 stays.
  EXPECT_TRUE(got.updates.recommended.empty());
  EXPECT_EQ(Versions(got.updates.conditional), (std::vector<std::string>{"1.2.0"}));
}

TEST(AgentGraphTest, ConditionalFromMatchesTheVersionStringExactly) {
  std::string json = WithConditional(fmt::format(R"([{{"edges": [{{"from": "1.0.0+x", "to": "1.2.0"}}], "risks": [{}]}}])", kRisk));
  auto got = Compute(json, "1.0.0");
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got.updates.conditional.empty());
}

TEST(AgentGraphTest, BrokenAnswersAreResponseInvalidNamingTheElement) {
  struct Case {
    std::string json;
    std::string needle;
  };
  std::vector<Case> cases = {
      {"[1]", "must be an object"},
      {"{\"nodes\": 3}", "nodes must be an array"},
      {R"({"nodes": [{"version": "v4.1.0", "payload": "a"}], "edges": []})", "nodes[0].version"},
      {R"({"nodes": [{"version": "4.01.0", "payload": "a"}], "edges": []})", "nodes[0].version"},
      {R"({"nodes": [{"version": " 4.1.0", "payload": "a"}], "edges": []})", "nodes[0].version"},
      {R"({"nodes": [{"version": "4.1.0", "payload": 7}], "edges": []})", "nodes[0].payload must be a string"},
      {R"({"nodes": [{"version": "4.1.0", "payload": "a"}], "edges": [[0, 0, 0]]})", "edges[0] must be an array of two"},
      {R"({"nodes": [{"version": "4.1.0", "payload": "a"}], "edges": [[0, 1]]})", "edges[0][1]: node index 1 is out of range"},
      {R"({"nodes": [{"version": "4.1.0", "payload": "a"}], "edges": [[0, -1]]})", "out of range"},
      {R"({"nodes": [{"version": "4.1.0", "payload": "a"}], "edges": [[0, 0.5]]})", "edges[0][1] must be an integer"},
      {R"({"nodes": [], "edges": [], "conditionalEdges": [{"edges": [{"from": 1}]}]})", "conditionalEdges[0].edges[0].from"},
      {R"({"nodes": [], "edges": [], "conditionalEdges": [{"risks": [{"matchingRules": [{"promql": "x"}]}]}]})",
       "conditionalEdges[0].risks[0].matchingRules[0].promql must be an object"},
      {R"({"nodes": [)", "invalid JSON"},
  };
  for (const auto& c : cases) {
    auto graph = ParseUpdateGraph(c.json);
    ASSERT_FALSE(graph.ok()) << c.json;
    EXPECT_NE(graph.status().message().find(c.needle), std::string::npos) << c.json << " -> " << graph.status().message();
  }
}

TEST(AgentGraphTest, KeysMatchIgnoringCaseAndUnknownKeysAreIgnored) {
  auto graph = ParseUpdateGraph(R"({"Nodes": [{"VERSION": "1.0.0", "Payload": "a"}, {"version": "1.1.0", "payload": "b"}],
                                    "EDGES": [[0, 1]], "extra": {"x": [1, 2]}, "version": 1})");
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  ASSERT_EQ(graph->nodes.size(), 2u);
  EXPECT_EQ(graph->nodes[0].payload, "a");
  EXPECT_EQ(graph->edges.size(), 1u);
}

TEST(AgentGraphTest, NodeMetadataOfOfferedReleasesMustBeUsable) {
  auto make = [](std::string_view target_metadata) {
    return fmt::format(R"({{"nodes": [{{"version": "1.0.0", "payload": "a"}}, {{"version": "1.1.0", "payload": "b", "metadata": {}}},
                          {{"version": "2.0.0", "payload": "z", "metadata": {{"url": 5}}}}], "edges": [[0, 1]]}})",
                       target_metadata);
  };
  // A node that is not offered may carry anything.
  EXPECT_TRUE(Compute(make("{}"), "1.0.0").ok());
  struct Case {
    std::string metadata, message;
  };
  std::vector<Case> cases = {
      {R"({"url": "ht tp://x"})", "invalid recommended update node: invalid release URL"},
      {R"({"url": "%zz"})", "invalid release URL"},
      {R"({"url": ["x"]})", "invalid recommended update node: URL is not a string: [\"x\"]"},
      {R"({"release.openshift.io/architecture": "amd64"})", "unrecognized release.openshift.io/architecture value \"amd64\""},
      {R"({"io.openshift.upgrades.graph.release.channels": ""})", "io.openshift.upgrades.graph.release.channels is an empty string"},
      {R"({"io.openshift.upgrades.graph.release.channels": "a,,b"})", "entry 1 is an empty string: \"a,,b\""},
  };
  for (const auto& c : cases) {
    auto got = Compute(make(c.metadata), "1.0.0");
    EXPECT_EQ(got.failure.reason, "ResponseInvalid") << c.metadata;
    EXPECT_NE(got.failure.message.find(c.message), std::string::npos) << c.metadata << " -> " << got.failure.message;
  }
  auto current = Compute(make("{}"), "2.0.0");
  EXPECT_EQ(current.failure.reason, "ResponseInvalid");
  EXPECT_EQ(current.failure.message, "invalid current node: URL is not a string: 5");

  auto missing = Compute(WithConditional(fmt::format(R"([{{"edges": [{{"from": "1.0.0", "to": "9.9.9"}}], "risks": [{}]}}])", kRisk)),
                         "1.0.0");
  EXPECT_EQ(missing.failure.reason, "ResponseInvalid");
  EXPECT_EQ(missing.failure.message, "no node for conditional update 9.9.9");
}

GraphRequestInputs GoodInputs() {
  return {"http://127.0.0.1:8080/api/upgrades_info/v1/graph", "d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a", "amd64", "4.12.3",
          "stable-4.13"};
}

TEST(AgentGraphRequestTest, UrlCarriesSortedParametersAndKeepsTheUpstreamsOwn) {
  auto request = PrepareGraphRequest(GoodInputs());
  ASSERT_TRUE(request.ok()) << request.failure.message;
  EXPECT_EQ(request.url,
            "http://127.0.0.1:8080/api/upgrades_info/v1/graph?arch=amd64&channel=stable-4.13"
            "&id=d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a&version=4.12.3");
  auto inputs = GoodInputs();
  inputs.upstream = "https://example.com/graph?zeta=1&channel=ignored#frag";
  inputs.version = "4.12.3+x86";
  request = PrepareGraphRequest(inputs);
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request.url,
            "https://example.com/graph?arch=amd64&channel=stable-4.13&id=d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a"
            "&version=4.12.3%2Bx86&zeta=1");
  EXPECT_EQ(GraphUserAgent().rfind("ClusterVersionOperator/", 0), 0u);
}

TEST(AgentGraphRequestTest, LocalChecksRunInTheOperatorsOrder) {
  struct Case {
    void (*edit)(GraphRequestInputs&);
    std::string reason, message;
  };
  std::vector<Case> cases = {
      {[](GraphRequestInputs& in) { in.upstream.clear(), in.channel.clear(); }, "NoUpstream",
       "No updateService server has been set to retrieve updates."},
      {[](GraphRequestInputs& in) { in.upstream = "http://bad\x01host/"; in.cluster_id = "x"; }, "InvalidURI",
       "failed to parse update service URL"},
      {[](GraphRequestInputs& in) { in.cluster_id = "not-a-uuid"; in.arch.clear(); }, "InvalidID", "invalid cluster ID: invalid UUID length: 10"},
      {[](GraphRequestInputs& in) { in.cluster_id = "d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2g"; }, "InvalidID", "invalid UUID format"},
      {[](GraphRequestInputs& in) { in.arch.clear(); in.version.clear(); }, "NoArchitecture", "Architecture has not been configured."},
      {[](GraphRequestInputs& in) { in.version.clear(); in.channel.clear(); }, "NoCurrentVersion",
       "The cluster version does not have a semantic version assigned and cannot calculate valid upgrades."},
      {[](GraphRequestInputs& in) { in.channel.clear(); in.version = "junk"; }, "NoChannel", "The update channel has not been configured."},
      {[](GraphRequestInputs& in) { in.version = "4.12"; }, "InvalidCurrentVersion",
       "The current cluster version is not a valid semantic version and cannot be used to calculate upgrades."},
  };
  for (const auto& c : cases) {
    auto inputs = GoodInputs();
    c.edit(inputs);
    auto request = PrepareGraphRequest(inputs);
    EXPECT_EQ(request.failure.reason, c.reason);
    EXPECT_NE(request.failure.message.find(c.message), std::string::npos) << request.failure.message;
  }
}

// What an answer can make the agent keep is bounded: repeated edges count once, and an
// answer over a limit is refused whole, naming the limit, before anything is copied.
TEST(AgentGraphTest, WhatAnAnswerLeavesIsBounded) {
  const std::string nodes =
      R"([{"version": "4.1.0", "payload": "r@sha256:0"}, {"version": "4.1.1", "payload": "r@sha256:1"},
          {"version": "4.1.2", "payload": "r@sha256:2"}])";
  std::string edges;
  for (int i = 0; i < 1000000; ++i) edges += i % 2 ? "[0,1]," : "[0,2],";
  edges.pop_back();
  auto repeated = Compute(R"({"nodes": )" + nodes + R"(, "edges": [)" + edges + "]}", "4.1.0");
  ASSERT_TRUE(repeated.ok()) << repeated.failure.message;
  ASSERT_EQ(repeated.updates.recommended.size(), 2u);
  EXPECT_EQ(repeated.updates.recommended[0].version, "4.1.2");

  auto with_risks = [&](const std::string& risks, const std::string& extra_edges = "") {
    return R"({"nodes": )" + nodes + R"(, "edges": [], "conditionalEdges": [{"edges": [{"from": "4.1.0", "to": "4.1.1"})" +
           extra_edges + R"(], "risks": [)" + risks + "]}]}";
  };
  auto risk = [](const std::string& name, size_t message_bytes) {
    return R"({"url": "https://example.com", "name": ")" + name + R"(", "message": ")" + std::string(message_bytes, 'm') +
           R"(", "matchingRules": [{"type": "Always"}]})";
  };
  struct Case {
    std::string what, answer, words;
  };
  std::string many_risks, big_risks;
  for (int i = 0; i < 101; ++i) many_risks += (i ? "," : "") + risk("R" + std::to_string(i), 10);
  for (int i = 0; i < 20; ++i) big_risks += (i ? "," : "") + risk("R" + std::to_string(i), 60000);
  std::string too_many_risks;
  for (int i = 0; i < 100001; ++i) too_many_risks += (i ? ",{}" : "{}");
  std::string many_nodes = R"({"nodes": [)";
  for (int i = 0; i < 200001; ++i) many_nodes += (i ? "," : "") + std::string(R"({"version": "1.0.)") + std::to_string(i) + R"("})";
  many_nodes += "]}";
  for (const Case& c : std::vector<Case>{
           {"a 40 MiB message", with_risks(risk("Big", size_t{40} << 20)), "risk Big has a field of 41943040 bytes, more than the 65536"},
           {"more risks than an update keeps", with_risks(many_risks), "101 risks, more than the 100"},
           {"more bytes than the agent keeps", with_risks(big_risks), "more than 1048576 bytes of updates and risks"},
           {"more risks than an answer may hold", with_risks(too_many_risks), "more than 100000 risks"},
           {"more nodes than an answer may hold", many_nodes, "200001 nodes, more than the 200000"},
       }) {
    SCOPED_TRACE(c.what);
    // As the retriever reports it: a parse failure is ResponseInvalid too.
    RetrievalFailure failure{"ResponseInvalid", ""};
    auto graph = ParseUpdateGraph(c.answer);
    if (!graph.ok()) {
      failure.message = graph.status().message();
    } else {
      failure = ComputeAvailableUpdates(*graph, {*Version::Parse("4.1.0"), false, false}, "stable-4.1").failure;
    }
    EXPECT_EQ(failure.reason, "ResponseInvalid");
    EXPECT_NE(failure.message.find(c.words), std::string::npos) << failure.message.substr(0, 300);
  }

  // The same conditional edge twice is two conditional updates of one image: the CVO
  // drops both, and so does the agent (however many times it is repeated).
  std::string twice;
  for (int i = 0; i < 1000; ++i) twice += R"(, {"from": "4.1.0", "to": "4.1.1"})";
  auto doubled = Compute(with_risks(risk("R", 10), twice), "4.1.0");
  ASSERT_TRUE(doubled.ok()) << doubled.failure.message;
  EXPECT_TRUE(doubled.updates.conditional.empty());
}

TEST(AgentGraphRequestTest, ClusterIdsForTheApiAreVersion4) {
  EXPECT_TRUE(IsUuidV4("d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a"));
  EXPECT_FALSE(IsUuidV4("d5f1fb9d-5d29-1bb9-8fe3-4d26b7fd7a2a"));  // version 1
  EXPECT_FALSE(IsUuidV4("d5f1fb9d-5d29-4bb9-cfe3-4d26b7fd7a2a"));  // another variant
  EXPECT_FALSE(IsUuidV4("D5F1FB9D-5D29-4BB9-8FE3-4D26B7FD7A2A"));
  EXPECT_TRUE(ParseUuid("{d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a}").ok());
  EXPECT_TRUE(ParseUuid("urn:uuid:d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a").ok());
}

}  // namespace
}  // namespace cincinnati::graph_client
