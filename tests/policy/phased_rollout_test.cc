// Phased rollouts (graph-data 2.x): the schema rules, and the semantics measured over
// 10,000 random cluster ids with a controlled clock.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include <fmt/format.h>

#include "builder/pipeline.h"
#include "graph-data/graph_data.h"
#include "graph-data/managing_file.h"
#include "graph-data/time_format.h"
#include "graph-data/yaml_scalar.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"
#include "policy/phased_rollout.h"
#include "service/view_cache.h"
#include "core/graph_json.h"
#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using graphdata::DecodeManagingFile;
using graphdata::ParseYaml;

Status Decode(const std::string& yaml) {
  auto doc = ParseYaml(yaml);
  if (!doc.ok()) return doc.status();
  return DecodeManagingFile(*doc).status();
}

TEST(ClusterIdTest, OnlyAUuidOfHexDigitsInEitherCaseIsAClusterId) {
  EXPECT_TRUE(policy::IsValidClusterId("01234567-89ab-cdef-0123-456789abcdef"));
  EXPECT_TRUE(policy::IsValidClusterId("01234567-89AB-CDEF-0123-456789ABCDEF"));
  EXPECT_FALSE(policy::IsValidClusterId(""));
  EXPECT_FALSE(policy::IsValidClusterId("01234567-89ab-cdef-0123-456789abcde"));    // one short
  EXPECT_FALSE(policy::IsValidClusterId("01234567-89ab-cdef-0123-456789abcdef0"));  // one long
  EXPECT_FALSE(policy::IsValidClusterId("01234567-89ab-cdef-0123-456789abcdeg"));   // not hex
  EXPECT_FALSE(policy::IsValidClusterId("0123456789ab-cdef-0123-456789abcdef-"));   // dashes elsewhere
  EXPECT_FALSE(policy::IsValidClusterId("01234567_89ab_cdef_0123_456789abcdef"));
  EXPECT_FALSE(policy::IsValidClusterId(std::string_view("01234567-89ab-cdef-0123-456789abcde\0", 36)));
  EXPECT_FALSE(policy::IsValidClusterId("{1234567-89ab-cdef-0123-456789abcdef}"));
}

TEST(ManagingFileTest, SchemaRules) {
  auto seed = ParseYaml(testing::ReadFile(testing::Examples() / "phased/graph-data/channels/4.4.yaml"));
  ASSERT_TRUE(seed.ok());
  auto file = DecodeManagingFile(*seed);
  ASSERT_TRUE(file.ok()) << file.status().message();
  ASSERT_EQ(file->channels.size(), 2u);
  EXPECT_TRUE(file->channels[0].rules.empty());
  EXPECT_EQ(file->channels[1].rules[0].from_version, "patch");
  EXPECT_EQ(file->channels[1].rules[1].duration_seconds, 14 * 86400);
  EXPECT_EQ(file->versions[2].start, 1589241600);
  EXPECT_TRUE(Decode("channels: [{name: a-1, phasedRollouts: [{duration: P1D}, {fromVersion: major, duration: P1W}]}]").ok())
      << "a default and an unknown criterion are valid";
  EXPECT_TRUE(Decode("channels: [{name: a-1}]\nversions: [{name: 1.0.0, start: '2020-01-01T00:00:00Z', locked: true}]").ok());
  struct Case {
    const char* yaml;
    const char* needle;
  };
  for (const Case& c : std::vector<Case>{
           {"versions: []", "missing key 'channels'"},
           {"channels: []", "non-empty"},
           {"channels: [{phasedRollouts: []}]", "channels[0]: missing key 'name'"},
           {"channels: [{name: a-1, extra: 1}]", "channels[0]: unknown key 'extra'"},
           {"channels: [{name: a-1}, {name: a-1}]", "channels[1]: channel 'a-1' is listed twice"},
           {"channels: [{name: a-1, phasedRollouts: [{fromVersion: patch}]}]", "phasedRollouts[0]: missing key 'duration'"},
           {"channels: [{name: a-1, phasedRollouts: [{duration: P2X}]}]", "invalid duration 'P2X'"},
           {"channels: [{name: a-1, phasedRollouts: [{duration: P1D}, {duration: P2D}]}]", "criterion (default) appears twice"},
           {"channels: [{name: a-1, phasedRollouts: [{fromVersion: minor, duration: P1D}, {fromVersion: minor, duration: P2D}]}]",
            "criterion minor appears twice"},
           {"channels: [{name: a-1}]\nversions: [{name: 1.0, start: '2020-01-01T00:00Z'}]", "versions[0]"},
           {"channels: [{name: a-1}]\nversions: [{name: 1.0.0, start: yesterday}]", "invalid date-time 'yesterday'"},
           {"channels: [{name: a-1}]\nversions: [{name: 1.0.0}]", "versions[0]: missing key 'start'"},
           {"channels: [{name: a-1}]\nversions: [{name: 1.0.0, start: '2020-01-01T00:00Z', locked: maybe}]", "'locked'"},
       }) {
    Status st = Decode(c.yaml);
    ASSERT_FALSE(st.ok()) << c.yaml;
    EXPECT_NE(st.message().find(c.needle), std::string::npos) << c.yaml << " -> " << st.message();
  }
}

TEST(ManagingFileTest, LoaderRefusesAChannelInTwoFilesAndOtherMajors) {
  testing::TempDir dir;
  fs::copy(testing::Examples() / "phased/graph-data", dir / "gd", fs::copy_options::recursive);
  testing::WriteFile(dir / "gd/channels/other.yaml", "channels: [{name: stable-4.4}]\n");
  Diagnostics d;
  auto data = graphdata::LoadGraphData(dir / "gd", {}, d);
  ASSERT_FALSE(data.ok());
  EXPECT_NE(data.status().message().find("channels/other.yaml: channel 'stable-4.4' is also managed by channels/4.4.yaml"),
            std::string::npos)
      << data.status().message();
  fs::remove(dir / "gd/channels/other.yaml");
  testing::WriteFile(dir / "gd/channels/broken.yaml", "channels: [{name: x-1, phasedRollouts: [{duration: soon}]}]\n");
  data = graphdata::LoadGraphData(dir / "gd", {}, d);
  ASSERT_FALSE(data.ok());
  EXPECT_NE(data.status().message().find("channels/broken.yaml: channels[0].phasedRollouts[0]"), std::string::npos)
      << data.status().message();
}

// The seed example built by the graph builder, viewed through the default policy chain.
class PhasedSemanticsTest : public ::testing::Test {
 protected:
  static constexpr int64_t kStart = 1589241600;  // 4.4.3: 2020-05-12T00:00Z
  static constexpr int64_t kDay = 86400;

  void SetUp() override {
    auto g = testing::BuildLocal(testing::Examples() / "phased/releases", testing::Examples() / "phased/graph-data");
    ASSERT_TRUE(g.ok()) << g.status().message();
    graph_ = std::move(g).value();
    std::mt19937_64 rng(12345);
    for (int i = 0; i < 10000; ++i) {
      uint64_t a = rng(), b = rng();
      ids_.push_back(fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xffff,
                                 b >> 48, b & 0xffffffffffffULL));
    }
  }

  // Whether the cluster `id` (empty: none) sees from->to in `channel` at time `now`: the
  // default chain's channel and arch filters (run once per channel: they do not depend
  // on the id or the time), then the phased rollout.
  bool Sees(const std::string& channel, const std::string& from, const std::string& to, int64_t now,
            const std::string& id) {
    TransformContext context;
    context.parameters = {{"channel", channel}};
    auto filtered = filtered_.find(channel);
    if (filtered == filtered_.end()) {
      TransformChain filters;
      filters.push_back(std::make_unique<policy::ChannelFilter>());
      filters.push_back(std::make_unique<policy::ArchFilter>());
      auto view = RunChainOn(filters, graph_, context);
      EXPECT_TRUE(view.ok()) << view.status().message();
      if (!view.ok()) return false;
      filtered = filtered_.emplace(channel, std::move(view).value()).first;
    }
    TransformChain chain;
    chain.push_back(std::make_unique<policy::PhasedRollout>(env::ManualClock::AtUnixSeconds(now)));
    if (!id.empty()) context.parameters["id"] = id;
    auto view = RunChainOn(chain, filtered->second, context);
    EXPECT_TRUE(view.ok()) << view.status().message();
    auto f = view->Find(from), t = view->Find(to);
    for (const Node& n : view->nodes()) {
      EXPECT_FALSE(n.metadata.count("io.openshift.upgrades.graph.phased.start")) << "internal key leaked";
    }
    return f && t && view->HasEdge(*f, *t);
  }
  bool HasNode(const std::string& channel, const std::string& version, int64_t now) {
    TransformChain chain;
    chain.push_back(std::make_unique<policy::ChannelFilter>());
    chain.push_back(std::make_unique<policy::ArchFilter>());
    chain.push_back(std::make_unique<policy::PhasedRollout>(env::ManualClock::AtUnixSeconds(now)));
    TransformContext context;
    context.parameters = {{"channel", channel}, {"id", ids_[0]}};
    return RunChainOn(chain, graph_, context)->Find(version).has_value();
  }
  double Share(const std::string& from, int64_t now) {
    int seeing = 0;
    for (const std::string& id : ids_) seeing += Sees("stable-4.4", from, "4.4.3", now, id);
    return seeing / static_cast<double>(ids_.size());
  }

  Graph graph_;
  std::map<std::string, Graph> filtered_;  // graph_ through the channel and arch filters, by channel
  std::vector<std::string> ids_;
};

TEST_F(PhasedSemanticsTest, PatchWindowRampsLinearly) {
  for (int k = 0; k <= 10; ++k) {
    double share = Share("4.4.2", kStart + k * 2 * kDay / 10);
    EXPECT_NEAR(share, k / 10.0, 0.02) << "k=" << k;
  }
  EXPECT_DOUBLE_EQ(Share("4.4.2", kStart + 2 * kDay + 1), 1.0);
}

TEST_F(PhasedSemanticsTest, MinorWindowIsFourteenDays) {
  EXPECT_NEAR(Share("4.3.18", kStart + 2 * kDay), 2.0 / 14, 0.02);
  EXPECT_NEAR(Share("4.3.18", kStart + 7 * kDay), 0.5, 0.02);
  EXPECT_DOUBLE_EQ(Share("4.3.18", kStart + 14 * kDay), 1.0);
}

TEST_F(PhasedSemanticsTest, NeverBeforeStartAndFastAtStart) {
  EXPECT_FALSE(HasNode("stable-4.4", "4.4.3", kStart - 1));
  EXPECT_FALSE(HasNode("fast-4.4", "4.4.3", kStart - 1));
  EXPECT_TRUE(HasNode("stable-4.4", "4.4.3", kStart));
  EXPECT_DOUBLE_EQ(Share("4.4.2", kStart - 1), 0.0);
  int fast = 0;
  for (const std::string& id : ids_) fast += Sees("fast-4.4", "4.4.2", "4.4.3", kStart, id);
  EXPECT_EQ(fast, 10000);  // no rules: everyone at start
}

TEST_F(PhasedSemanticsTest, NoValidIdWaitsForTheEndOfTheWindow) {
  for (const std::string& id : {std::string(), std::string("not-a-uuid")}) {
    EXPECT_FALSE(Sees("stable-4.4", "4.4.2", "4.4.3", kStart + 2 * kDay - 1, id));
    EXPECT_TRUE(Sees("stable-4.4", "4.4.2", "4.4.3", kStart + 2 * kDay, id));
  }
}

TEST_F(PhasedSemanticsTest, EarlySlotsRotateBetweenReleases) {
  int overlap = 0;
  for (const std::string& id : ids_) {
    overlap += policy::RolloutPosition(id, "4.4.3") < 0.1 && policy::RolloutPosition(id, "4.4.4") < 0.1;
  }
  EXPECT_NEAR(overlap / 10000.0, 0.01, 0.005);
  // Deterministic: the same answer every time, anywhere.
  EXPECT_EQ(policy::RolloutPosition(ids_[7], "4.4.3"), policy::RolloutPosition(ids_[7], "4.4.3"));
}

// The preview's timings are the transform's: an edge is served exactly from the
// second the preview says it appears.
TEST_F(PhasedSemanticsTest, PreviewTimingsMatchWhatIsServed) {
  TransformChain filters;
  filters.push_back(std::make_unique<policy::ChannelFilter>());
  filters.push_back(std::make_unique<policy::ArchFilter>());
  TransformContext c;
  c.parameters = {{"channel", "stable-4.4"}};
  Graph view = RunChainOn(filters, graph_, c).value();
  for (size_t i = 0; i < 200; ++i) {
    auto timings = policy::EdgeTimings(view, "stable-4.4", ids_[i]);
    ASSERT_TRUE(timings.ok()) << timings.status().message();
    for (const policy::EdgeTiming& t : *timings) {
      if (t.appears == INT64_MIN) continue;
      EXPECT_FALSE(Sees("stable-4.4", t.from, t.to, t.appears - 1, ids_[i])) << t.from << "->" << t.to;
      EXPECT_TRUE(Sees("stable-4.4", t.from, t.to, t.appears, ids_[i])) << t.from << "->" << t.to;
    }
  }
}

// Answers reused by key (server::ViewCache) are byte-identical to computing each one.
TEST_F(PhasedSemanticsTest, CachedAnswersEqualComputedOnes) {
  for (int64_t now : {kStart - 1, kStart, kStart + kDay / 3, kStart + kDay, kStart + 5 * kDay, kStart + 20 * kDay}) {
    TransformChain chain;
    chain.push_back(std::make_unique<policy::ChannelFilter>());
    chain.push_back(std::make_unique<policy::ArchFilter>());
    chain.push_back(std::make_unique<policy::PhasedRollout>(env::ManualClock::AtUnixSeconds(now)));
    server::ViewCache cache(chain, std::make_shared<const Graph>(graph_));
    std::set<std::string> distinct;
    for (size_t i = 0; i < 300; ++i) {
      Parameters params{{"channel", "stable-4.4"}, {"id", ids_[i % 150]}};  // every id twice: the second is a hit
      auto cached = cache.Get(params);
      ASSERT_TRUE(cached.ok());
      TransformContext c;
      c.parameters = params;
      auto direct = RunChainOn(chain, graph_, c);
      ASSERT_TRUE(direct.ok());
      EXPECT_EQ(*(*cached)->body(), WriteGraphJson(*direct, {.schema_version = 1})) << "now=" << now << " id=" << ids_[i];
      distinct.insert(*(*cached)->body());
    }
    EXPECT_LE(distinct.size(), 8u);  // at most 2^3 (three phased edges), not one per cluster
  }
}

}  // namespace
}  // namespace cincinnati
