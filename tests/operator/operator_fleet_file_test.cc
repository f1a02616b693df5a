// The operator's fleet file (operator/fleet_file.h): a fleet is read whatever its number
// of clusters, up to the file's size limit; a malformed file is refused with its line and
// column; aliases may share a cluster's labels but not blow the file up.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "operator/operator_config.h"
#include "test_util.h"

namespace cincinnati::upgrade {
namespace {

using testing::TempDir;

// What the reader said of `yaml`, or "" when it read it.
std::string FaultOf(const std::string& yaml) {
  auto fleet = ParseFleet(yaml, "fleet.yaml");
  return fleet.ok() ? "" : fleet.status().message();
}

// A fleet as an administrator writes one: each cluster with an agent, a token file and
// two labels (about 155 bytes of YAML a cluster).
std::string GeneratedFleet(int clusters) {
  std::string yaml = "clusters:\n";
  yaml.reserve(size_t(clusters) * 160);
  for (int i = 0; i < clusters; ++i) {
    fmt::format_to(std::back_inserter(yaml),
                   "- name: c{0:07}\n  agent: https://c{0:07}.agents.example.com:8443\n  tokenFile: /etc/fleet/tokens/c{0:07}\n"
                   "  labels:\n    wave: w{1}\n    region: eu-west-{2}\n",
                   i, i % 4, i % 3);
  }
  return yaml;
}

// Read through a yaml-cpp tree, this fleet was refused at about 77,000 clusters ("aliases
// expand to too many nodes", though it has no alias).
TEST(FleetFileTest, AFleetOf300000ClustersWithTokenFilesAndLabelsIsRead) {
  const std::string yaml = GeneratedFleet(300'000);
  ASSERT_GT(yaml.size(), 45u * 1000 * 1000);
  auto fleet = ParseFleet(yaml, "fleet.yaml");
  ASSERT_TRUE(fleet.ok()) << fleet.status().message();
  ASSERT_EQ(fleet->size(), 300'000u);
  const FleetCluster& last = fleet->back();
  EXPECT_EQ(last.name, "c0299999");
  EXPECT_EQ(last.agent_url, "https://c0299999.agents.example.com:8443");
  EXPECT_EQ(last.token_file, "/etc/fleet/tokens/c0299999");
  EXPECT_EQ(last.labels, (std::map<std::string, std::string>{{"wave", "w3"}, {"region", "eu-west-2"}}));
}

// A name repeated far apart is still found (the names are indexed, not compared pairwise).
TEST(FleetFileTest, ANameRepeatedAmongManyIsListedTwice) {
  std::string yaml = GeneratedFleet(50'000);
  yaml += "- {name: c0000017, agent: 'http://x'}\n";
  EXPECT_NE(FaultOf(yaml).find("fleet.yaml: clusters[50000].name: \"c0000017\" is listed twice"), std::string::npos)
      << FaultOf(yaml);
}

TEST(FleetFileTest, AliasesShareLabelsScalarsAndWholeClusters) {
  auto fleet = ParseFleet(R"(clusters:
- name: prod-1
  agent: &agent "https://agents.example.com"
  tokenFile: &token /etc/fleet/token
  labels: &prod {wave: &wave canary, region: eu}
- {name: prod-2, agent: *agent, tokenFile: *token, labels: *prod}
- {name: prod-3, agent: *agent, labels: {wave: *wave, *wave : yes-it-is}}
)", "fleet.yaml");
  ASSERT_TRUE(fleet.ok()) << fleet.status().message();
  ASSERT_EQ(fleet->size(), 3u);
  EXPECT_EQ((*fleet)[1].agent_url, "https://agents.example.com");
  EXPECT_EQ((*fleet)[1].token_file, "/etc/fleet/token");
  EXPECT_EQ((*fleet)[1].labels, (std::map<std::string, std::string>{{"wave", "canary"}, {"region", "eu"}}));
  EXPECT_EQ((*fleet)[2].labels, (std::map<std::string, std::string>{{"wave", "canary"}, {"canary", "yes-it-is"}}));

  // A whole cluster aliased is read as the cluster it stands for: here, its name again.
  EXPECT_NE(FaultOf("clusters:\n- &c {name: a, agent: 'http://x'}\n- *c\n").find("clusters[1].name: \"a\" is listed twice"),
            std::string::npos);
  // A shared labels mapping in every one of many clusters stays within the aliases' bound.
  std::string shared = "clusters:\n- {name: c0, agent: 'http://x', labels: &l {wave: canary, region: eu-west-1, tier: gold}}\n";
  for (int i = 1; i < 20'000; ++i) shared += fmt::format("- {{name: c{}, agent: 'http://x', labels: *l}}\n", i);
  auto many = ParseFleet(shared, "fleet.yaml");
  ASSERT_TRUE(many.ok()) << many.status().message();
  EXPECT_EQ(many->back().labels.at("tier"), "gold");
}

// Each level stands for ten of the one before: the file is under 1 KiB, what it stands
// for would be gigabytes.
TEST(FleetFileTest, AnAliasBombIsRefusedAsAliases) {
  std::string yaml = "clusters:\n- &l0 {name: a, agent: 'http://x', labels: {wave: canary}}\n";
  for (int level = 1; level <= 9; ++level) {
    yaml += fmt::format("- &l{} [", level);
    for (int i = 0; i < 10; ++i) yaml += fmt::format("{}*l{}", i ? ", " : "", level - 1);
    yaml += "]\n";
  }
  const std::string fault = FaultOf(yaml);
  EXPECT_NE(fault.find("fleet.yaml: invalid YAML at line "), std::string::npos) << fault;
  EXPECT_NE(fault.find("aliases expand to"), std::string::npos) << fault;

  // The same in a labels mapping, where a real file would put its aliases.
  std::string labels = "clusters:\n- name: a\n  agent: 'http://x'\n  labels:\n    l0: &l0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n";
  for (int level = 1; level <= 9; ++level) {
    labels += fmt::format("    l{0}: &l{0} [", level);
    for (int i = 0; i < 10; ++i) labels += fmt::format("{}*l{}", i ? ", " : "", level - 1);
    labels += "]\n";
  }
  EXPECT_NE(FaultOf(labels).find("aliases expand to"), std::string::npos) << FaultOf(labels);
}

struct Malformed {
  std::string yaml;
  std::string expected;  // a part of the message
};

TEST(FleetFileTest, MalformedYamlNamesLineAndColumn) {
  for (const auto& [yaml, expected] : std::vector<Malformed>{
           {"clusters:\n- name: a\n\tagent: 'http://x'\n", "fleet.yaml: invalid YAML at line 3, column 1: while scanning a plain scalar (line 2, column 9): found a tab character"},
           {"clusters:\n- name: a\n  agent: \"http://x\n", "fleet.yaml: invalid YAML at line 4, column 1"},
           {"clusters:\n- name: a\n   agent: 'http://x'\n", "fleet.yaml: invalid YAML at line 3, column 9"},
           {"clusters: [{name: a, agent: 'http://x'}\n", "fleet.yaml: invalid YAML at line 2, column 1"},
           {"clusters:\n- {name: a, agent: 'http://x', labels: *shared}\n", "line 2, column 40: alias '*shared' names no anchor before it"},
           {"clusters: []\n---\nclusters: []\n", "line 2, column 1: a second document; one file holds one document"},
           {std::string(250, '[') + std::string(250, ']') + "\n", "line 1, column 201: nested deeper than 200 levels"},
       }) {
    EXPECT_NE(FaultOf(yaml).find(expected), std::string::npos) << yaml << "\n" << FaultOf(yaml);
  }
}

TEST(FleetFileTest, DuplicateKeysAreRefusedWhereTheyAre) {
  for (const auto& [yaml, expected] : std::vector<Malformed>{
           {"clusters:\n- name: a\n  agent: 'http://x'\n  name: b\n", "fleet.yaml: invalid YAML at line 4, column 3: duplicate key 'name'"},
           {"clusters:\n- {name: a, agent: 'http://x', labels: {wave: a, wave: b}}\n", "line 2, column 50: duplicate key 'wave'"},
           {"clusters: []\nclusters: []\n", "line 2, column 1: duplicate key 'clusters'"},
           {"clusters:\n- {name: a, agent: 'http://x', labels: {~: a, null: b}}\n", "duplicate key 'null'"},
           // A duplicate anywhere counts, even under a key the file may not have.
           {"clusters: []\nextra: {a: 1, a: 2}\n", "line 2, column 15: duplicate key 'a'"},
       }) {
    EXPECT_NE(FaultOf(yaml).find(expected), std::string::npos) << yaml << "\n" << FaultOf(yaml);
  }
}

// Scalars are typed as the JSON DOM typed them: only strings are strings.
TEST(FleetFileTest, ScalarsAreTypedAsBefore) {
  auto fleet = ParseFleet(R"(clusters:
- {name: a, agent: 'http://x', tokenFile: !!str 5, labels: {n: "123", b: 'true', e: ""}}
- {name: b, agent: 'http://y', tokenFile: ~, labels: ~}
)", "fleet.yaml");
  ASSERT_TRUE(fleet.ok()) << fleet.status().message();
  EXPECT_EQ((*fleet)[0].token_file, "5");
  EXPECT_EQ((*fleet)[0].labels, (std::map<std::string, std::string>{{"n", "123"}, {"b", "true"}, {"e", ""}}));
  EXPECT_EQ((*fleet)[1].token_file, "");
  EXPECT_TRUE((*fleet)[1].labels.empty());
  for (const auto& [yaml, expected] : std::vector<Malformed>{
           {"clusters: [{name: a, agent: 'http://x', labels: {n: 123}}]", "fleet.yaml: clusters[0].labels.n: must be a string"},
           {"clusters: [{name: a, agent: 'http://x', labels: {b: true}}]", "clusters[0].labels.b: must be a string"},
           {"clusters: [{name: a, agent: 'http://x', labels: {z: ~}}]", "clusters[0].labels.z: must be a string"},
           {"clusters: [{name: a, agent: 'http://x', labels: [a]}]", "clusters[0].labels: must be a mapping of strings"},
           {"clusters: [{name: 12, agent: 'http://x'}]", "clusters[0].name: must be a string"},
           {"clusters: [{name: a, agent: {url: 'http://x'}}]", "clusters[0].agent: must be a string"},
           {"clusters: [{name: a, agent: 'http://x', tokenFile: 1.5}]", "clusters[0].tokenFile: must be a string"},
           {"clusters: [{agent: 'http://x'}]", "clusters[0].name: \"\" is not a cluster name"},
           {"clusters: [a]", "clusters[0].: must be a mapping"},
           {"clusters: {a: b}", "fleet.yaml: clusters: must be a list"},
           {"", "fleet.yaml: the fleet file must be a mapping with a `clusters` list"},
           {"[a]", "the fleet file must be a mapping with a `clusters` list"},
           {"clusters:\n- {name: a, agent: 'http://x', [k]: v}\n", "fleet.yaml: a mapping key that is not a scalar"},
           {"clusters: []\nextra: " + std::string(70, '[') + std::string(70, ']') + "\n", "fleet.yaml: nested too deeply"},
       }) {
    EXPECT_NE(FaultOf(yaml).find(expected), std::string::npos) << yaml << "\n" << FaultOf(yaml);
  }
}

// Of several faults the one reported is the one a reading through a JSON DOM reported:
// an unknown key at the top before a cluster's fault, a cluster's unknown key before its
// other faults, a syntax error anywhere before them all.
TEST(FleetFileTest, OfSeveralFaultsTheSameOneIsReported) {
  EXPECT_NE(FaultOf("clusters: [{name: A}]\nnodes: []\n").find("fleet.yaml: nodes: unknown key (known: clusters)"),
            std::string::npos);
  EXPECT_NE(FaultOf("clusters: [{name: A, extra: 1}]\n").find("clusters[0].extra: unknown key (known: name, agent, tokenFile, labels)"),
            std::string::npos);
  EXPECT_NE(FaultOf("clusters: [{name: a, agent: x}, {name: B}]\n").find("clusters[0].agent: \"x\" is not an http"),
            std::string::npos);
  // A syntax error after a fault in a cluster is still the one reported.
  EXPECT_NE(FaultOf("clusters: [{name: B}]\nx: 'open\n").find("invalid YAML at line"), std::string::npos);
}

// A file over the limit is refused before it is read, naming both sizes (a sparse file:
// nothing is written).
TEST(FleetFileTest, AFileOverTheLimitIsRefusedUnread) {
  TempDir dir;
  const auto path = dir / "fleet.yaml";
  testing::WriteFile(path, "clusters: []\n");
  std::filesystem::resize_file(path, kMaxFleetFileBytes + 1);
  auto fleet = LoadFleet(path.string());
  ASSERT_FALSE(fleet.ok());
  EXPECT_NE(fleet.status().message().find("over the limit of 256"), std::string::npos) << fleet.status().message();
  EXPECT_NE(fleet.status().message().find("the file is 256"), std::string::npos) << fleet.status().message();
}

}  // namespace
}  // namespace cincinnati::upgrade
