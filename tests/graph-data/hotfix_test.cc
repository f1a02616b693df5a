// graph-data hotfixes/: decoding, loading with cross-checks, applying to a graph, and
// the linter.
#include <gtest/gtest.h>

#include "builder/pipeline.h"
#include "core/graph_json.h"
#include "core/hotfix_rule.h"
#include "graph-data/graph_data.h"
#include "graph-data/hotfix.h"
#include "graph-data/lint.h"
#include "graph-data/yaml_scalar.h"
#include "test_util.h"

namespace cincinnati::graphdata {
namespace {

namespace fs = std::filesystem;

Result<Hotfix> Decode(const std::string& yaml) {
  auto doc = ParseYaml(yaml);
  if (!doc.ok()) return doc.status();
  return DecodeHotfix(*doc, "from-file-name");
}

constexpr const char* kValid =
    "customers: [acme]\nselectors:\n- {region: eu-west, tier: gold}\nchannels: [stable-4.13]\n"
    "releases: [4.13.1-hotfix.1]\nedges:\n- {from: 4.12.3, to: 4.13.1-hotfix.1}\n- {from: 4.13.1-hotfix.1, to: 4.13.2}\n";

TEST(HotfixDecodeTest, ReadsEveryKey) {
  auto h = Decode(kValid);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->rule.name, "from-file-name");
  EXPECT_EQ(h->rule.customers, std::vector<std::string>{"acme"});
  ASSERT_EQ(h->rule.selectors.size(), 1u);
  EXPECT_EQ(h->rule.selectors[0].at("tier"), "gold");
  EXPECT_EQ(h->releases.size(), 1u);
  EXPECT_EQ(h->edges.size(), 2u);
  // The wire form round-trips.
  auto decoded = DecodeHotfixRules(EncodeHotfixRule(h->rule));
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(*decoded, std::vector<HotfixRule>{h->rule});
}

TEST(HotfixDecodeTest, RejectsWithTheReason) {
  struct Case {
    std::string yaml, reason;
  } cases[] = {
      {"channels: [stable-4.13]\nreleases: [4.13.1-hotfix.1]\n", "nobody would see it"},
      {"customers: [acme]\nreleases: [4.13.1-hotfix.1]\n", "missing key 'channels'"},
      {"customers: [acme]\nchannels: []\nreleases: [4.13.1-hotfix.1]\n", "'channels' must not be empty"},
      {"customers: [acme]\nchannels: [stable-4.13]\n", "missing key 'releases'"},
      {"customers: [acme]\nchannels: [stable-4.13]\nreleases: [4.13]\n", "releases[0]"},
      {"customers: [acme]\nchannels: [stable-4.13]\nreleases: 4.13.1\n", "'releases' must be a list"},
      {"customers: ['ac me']\nchannels: [stable-4.13]\nreleases: [4.13.1]\n", "'ac me' is not a valid name"},
      {"customers: [acme]\nchannels: [stable-4.13]\nreleases: [4.13.1]\nowner: x\n", "unknown key 'owner'"},
      {"customers: [acme]\nchannels: [stable-4.13]\nreleases: [4.13.1]\nedges:\n- {from: 4.12.1, to: 4.12.2}\n",
       "touches none of the hotfix's releases"},
      {"customers: [acme]\nchannels: [stable-4.13]\nreleases: [4.13.1]\nselectors:\n- {tier: 1}\n", "must be a string"},
      {"name: 'a|b'\ncustomers: [acme]\nchannels: [stable-4.13]\nreleases: [4.13.1]\n", "name 'a|b' is not valid"},
  };
  for (const Case& c : cases) {
    auto h = Decode(c.yaml);
    ASSERT_FALSE(h.ok()) << c.yaml;
    EXPECT_NE(h.status().message().find(c.reason), std::string::npos) << h.status().message();
  }
}

TEST(HotfixRuleTest, CustomersOrEverySelectorLabel) {
  HotfixRule rule{"fix", {"stable-4.13"}, {"acme"}, {{{"region", "eu"}, {"tier", "gold"}}}};
  EXPECT_TRUE(rule.AppliesTo({"acme", {}}));
  EXPECT_FALSE(rule.AppliesTo({"globex", {{"region", "eu"}}}));
  EXPECT_TRUE(rule.AppliesTo({"globex", {{"region", "eu"}, {"tier", "gold"}, {"x", "y"}}}));
  EXPECT_FALSE(rule.AppliesTo({"", {}}));
  EXPECT_TRUE(rule.InChannel("stable-4.13"));
  EXPECT_FALSE(rule.InChannel("fast-4.13"));
}

// A copy of the 4.x example's graph-data to break.
class HotfixLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::copy(testing::Examples() / "ocp-4x/graph-data", dir_ / "gd", fs::copy_options::recursive);
  }
  Status Load() {
    Diagnostics d;
    auto data = LoadGraphData(dir_ / "gd", {}, d);
    return data.ok() ? Status::OK() : data.status();
  }
  testing::TempDir dir_;
};

TEST_F(HotfixLoadTest, ExampleLoadsAndUnknownChannelOrDuplicateNameIsNamed) {
  ASSERT_TRUE(Load().ok()) << Load().message();
  testing::WriteFile(dir_ / "gd/hotfixes/other.yaml",
                     "name: acme-etcd-defrag\ncustomers: [globex]\nchannels: [stable-4.13]\nreleases: [4.13.0]\n");
  Status dup = Load();
  EXPECT_NE(dup.message().find("hotfixes/other.yaml: hotfix 'acme-etcd-defrag' is also defined by "
                               "hotfixes/acme-etcd-defrag.yaml"), std::string::npos) << dup.message();
  testing::WriteFile(dir_ / "gd/hotfixes/other.yaml", "customers: [globex]\nchannels: [stable-9.9]\nreleases: [4.13.0]\n");
  Status unknown = Load();
  EXPECT_NE(unknown.message().find("hotfixes/other.yaml: channel 'stable-9.9' is not defined"), std::string::npos)
      << unknown.message();
  testing::WriteFile(dir_ / "gd/hotfixes/other.yaml", "customers: [globex\n");
  EXPECT_NE(Load().message().find("hotfixes/other.yaml"), std::string::npos);
  // The linter reports the same, with the file.
  Diagnostics lint = CheckGraphData(dir_ / "gd");
  EXPECT_GE(lint.Count(Diagnostic::Severity::kError), 1u);
  bool named = false;
  for (const auto& d : lint.items()) named |= d.location == "hotfixes/other.yaml";
  EXPECT_TRUE(named);
}

TEST_F(HotfixLoadTest, AppliedHotfixMarksTheReleaseAndAddsItsEdges) {
  auto graph = testing::BuildLocal(testing::Examples() / "ocp-4x/releases", dir_ / "gd");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto h = graph->Find("4.13.1-hotfix.1+amd64");
  ASSERT_TRUE(h);
  const Metadata& m = graph->node(*h).metadata;
  EXPECT_EQ(m.at("io.openshift.upgrades.graph.release.channels"), "fast-4.13,stable-4.13");
  auto rules = DecodeHotfixRules(m.at("io.openshift.upgrades.graph.hotfix.rules")).value();
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0].name, "acme-etcd-defrag");
  EXPECT_TRUE(graph->HasEdge(*graph->Find("4.12.3+amd64"), *h));
  EXPECT_TRUE(graph->HasEdge(*graph->Find("4.12.4+amd64"), *h));
  EXPECT_TRUE(graph->HasEdge(*h, *graph->Find("4.13.2+amd64")));
  // An extra edge that closes a cycle fails the build, naming the cycle.
  testing::WriteFile(dir_ / "gd/hotfixes/loop.yaml",
                     "customers: [acme]\nchannels: [stable-4.13]\nreleases: [4.13.1-hotfix.1]\n"
                     "edges:\n- {from: 4.13.2, to: 4.13.1-hotfix.1}\n");
  auto cyclic = testing::BuildLocal(testing::Examples() / "ocp-4x/releases", dir_ / "gd");
  ASSERT_FALSE(cyclic.ok());
  EXPECT_NE(cyclic.status().message().find("4.13.1-hotfix.1"), std::string::npos) << cyclic.status().message();
}

TEST(HotfixSchema2Test, PhasedGraphDataTakesHotfixesForManagedChannels) {
  testing::TempDir dir;
  fs::copy(testing::Examples() / "phased/graph-data", dir / "gd", fs::copy_options::recursive);
  testing::WriteFile(dir / "gd/hotfixes/fix.yaml", "customers: [acme]\nchannels: [fast-4.4]\nreleases: [4.4.2]\n");
  Diagnostics d;
  auto data = LoadGraphData(dir / "gd", {}, d);
  ASSERT_TRUE(data.ok()) << data.status().message();
  ASSERT_EQ(data->hotfixes.size(), 1u);
  EXPECT_EQ(data->hotfixes[0].document.rule.name, "fix");
  testing::WriteFile(dir / "gd/hotfixes/fix.yaml", "customers: [acme]\nchannels: [stable-4.13]\nreleases: [4.4.2]\n");
  EXPECT_FALSE(LoadGraphData(dir / "gd", {}, d).ok());
}

}  // namespace
}  // namespace cincinnati::graphdata
