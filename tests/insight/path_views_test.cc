// PlanPaths' shortcuts (src/insight/queries.h, update_paths.h) checked against the plain
// way on a generated multi-arch graph: each channel's view made from the narrowed
// builder graph is the chain's answer on the whole graph, byte for byte, and every
// answer (the same k paths in the same order, the same stop, the same blocked edges)
// is the one the views from the whole graph and every removed edge decoded up front give.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/graph_json.h"
#include "insight/builder_records.h"
#include "insight/queries.h"
#include "insight/update_paths.h"
#include "policy/default_chain.h"
#include "test_util.h"

namespace cincinnati {
namespace {

using insight::ChannelView;
using insight::PathAnswer;

constexpr int kMinors = 5, kPatches = 10;

std::string V(int minor, int patch) { return "4." + std::to_string(minor) + "." + std::to_string(patch); }

// Releases 4.1..4.5 x 10 patches for amd64 and arm64 (arm64 lacks every third patch):
// each names the 4 patches before it and the last 3 of the minor before. Channels
// candidate/fast/stable per minor hold the last 5 patches of the minor before and
// (all, the first 8, the first 6 of) their own; sparse-4.M holds releases whose direct
// edge is blocked, risky-4.4 releases whose direct edge has a risk. Blocked edges: into
// 4.M.5 from 4.(M-1) with a risk, and 4.M.3 -> 4.M.7 unconditionally.
Result<Graph> GeneratedGraph(const testing::TempDir& dir) {
  for (const std::string arch : {"amd64", "arm64"}) {
    for (int m = 1; m <= kMinors; ++m) {
      for (int p = 0; p < kPatches; ++p) {
        if (arch == "arm64" && p % 3 == 2) continue;
        std::string previous;
        for (int q = std::max(0, p - 4); q < p; ++q) previous += (previous.empty() ? "\"" : ",\"") + V(m, q) + "\"";
        for (int q = kPatches - 3; m > 1 && q < kPatches; ++q) {
          previous += (previous.empty() ? "\"" : ",\"") + V(m - 1, q) + "\"";
        }
        testing::WriteFile(dir / ("releases/" + V(m, p) + "-" + arch + ".json"),
                           R"({"kind":"cincinnati-metadata-v0","version":")" + V(m, p) + "+" + arch +
                               R"(","previous":[)" + previous + R"(],"metadata":{},"payload":"quay.io/x/y@sha256:)" +
                               std::string(63, 'a') + std::to_string(p % 10) + "\"}");
      }
    }
  }
  testing::WriteFile(dir / "graph-data/version", "1.0.0\n");
  testing::WriteFile(dir / "graph-data/raw/metadata.json", "{}");
  const std::map<std::string, int> own{{"candidate", kPatches}, {"fast", 8}, {"stable", 6}};
  for (int m = 1; m <= kMinors; ++m) {
    for (const auto& [kind, count] : own) {
      std::string versions;
      for (int p = kPatches - 5; m > 1 && p < kPatches; ++p) versions += "- " + V(m - 1, p) + "\n";
      for (int p = 0; p < count; ++p) versions += "- " + V(m, p) + "\n";
      const std::string name = kind + "-4." + std::to_string(m);
      testing::WriteFile(dir / ("graph-data/channels/" + name + ".yaml"), "name: " + name + "\nversions:\n" + versions);
    }
    if (m > 1) {
      testing::WriteFile(dir / ("graph-data/blocked-edges/" + V(m, 5) + "-Risk" + std::to_string(m) + ".yaml"),
                         "to: " + V(m, 5) + "\nfrom: 4[.]" + std::to_string(m - 1) +
                             "[.].*\nurl: https://example.com/r\nname: Risk" + std::to_string(m) +
                             "\nmessage: m\nmatchingRules:\n- type: Always\n");
    }
    testing::WriteFile(dir / ("graph-data/blocked-edges/" + V(m, 7) + ".yaml"),
                       "to: " + V(m, 7) + "\nfrom: 4[.]" + std::to_string(m) + "[.]3[+].*\n");
    const std::string sparse = "sparse-4." + std::to_string(m);
    testing::WriteFile(dir / ("graph-data/channels/" + sparse + ".yaml"),
                       "name: " + sparse + "\nversions: [" + V(m, 3) + ", " + V(m, 7) + ", " + V(m, 9) + "]\n");
  }
  testing::WriteFile(dir / "graph-data/channels/risky-4.4.yaml",
                     "name: risky-4.4\nversions: [" + V(3, 8) + ", " + V(4, 5) + ", " + V(4, 9) + "]\n");
  return testing::BuildLocal(dir / "releases", dir / "graph-data");
}

class PathViewsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto graph = GeneratedGraph(dir_);
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    graph_ = std::move(graph).value();
  }
  insight::PathQuery Query(std::vector<std::string> channels, std::string arch, std::string from) const {
    insight::PathQuery q;
    q.channels = std::move(channels);
    q.arch = std::move(arch);
    q.from = std::move(from);
    return q;
  }
  // Each channel's view as the chain makes it from the whole builder graph.
  std::vector<ChannelView> WholeGraphViews(const insight::PathQuery& q) const {
    std::vector<ChannelView> views;
    for (const std::string& channel : q.channels) {
      TransformContext context;
      context.parameters = {{"channel", channel}, {"arch", q.arch}, {"version", q.from}};
      auto view = RunChainOn(chain_, graph_, context);
      EXPECT_TRUE(view.ok()) << view.status().message();
      views.push_back(ChannelView{channel, std::make_shared<const Graph>(view.ok() ? *view : Graph())});
    }
    return views;
  }

  testing::TempDir dir_;
  Graph graph_;
  TransformChain chain_ = policy::DefaultChain({}, env::ManualClock::AtUnixSeconds(1800000000));
};

const std::vector<std::vector<std::string>> kChannelSets = {
    {"fast-4.2", "fast-4.3", "fast-4.4", "fast-4.5"},
    {"stable-4.5", "candidate-4.2", "sparse-4.3", "risky-4.4", "fast-4.4"},
    {"sparse-4.1", "sparse-4.2", "sparse-4.3", "sparse-4.4", "sparse-4.5"},
    {"risky-4.4"},
    {"candidate-4.3"},
    {"fast-4.4", "no-such-channel"},
};

TEST_F(PathViewsTest, ViewsFromTheNarrowedGraphAreTheChainsAnswerOnTheWholeGraph) {
  size_t releases = 0;
  for (const auto& channels : kChannelSets) {
    for (const std::string arch : {"amd64", "arm64", "s390x"}) {
      insight::PathQuery q = Query(channels, arch, V(2, 4));
      auto views = insight::PathViews(chain_, graph_, q);
      ASSERT_TRUE(views.ok()) << views.status().message();
      std::vector<ChannelView> whole = WholeGraphViews(q);
      ASSERT_EQ(views->size(), whole.size());
      for (size_t i = 0; i < whole.size(); ++i) {
        SCOPED_TRACE(whole[i].channel + " " + arch);
        EXPECT_EQ(WriteGraphJson(*(*views)[i].view), WriteGraphJson(*whole[i].view));
        releases += whole[i].view->node_count();
      }
    }
  }
  EXPECT_GT(releases, 100u) << "the channels hold too few releases to compare";
}

// Every pair of releases of the views, with k = 3, accepting nothing and everything.
TEST_F(PathViewsTest, EveryAnswerIsTheOneFromTheWholeGraphWithEveryRemovedEdge) {
  std::map<std::string, size_t> stops;
  for (const auto& channels : kChannelSets) {
    for (const std::string arch : {"amd64", "arm64"}) {
      insight::PathQuery q = Query(channels, arch, V(2, 4));
      auto views = insight::PathViews(chain_, graph_, q);
      ASSERT_TRUE(views.ok());
      const insight::BuilderRecords records(graph_, arch);
      const insight::PathFinder fast(*views, records);
      const insight::PathFinder plain(WholeGraphViews(q), records.removals());
      std::vector<std::string> versions;
      for (const ChannelView& view : *views) {
        for (const Node& n : view.view->nodes()) versions.push_back(n.version);
      }
      for (const std::vector<std::string>& accept : {std::vector<std::string>{}, std::vector<std::string>{"*"}}) {
        insight::PathOptions options{accept, 3, 200000};
        for (const std::string& from : versions) {
          for (const std::string& to : versions) {
            PathAnswer got = fast.Find(from, to, options);
            ASSERT_EQ(insight::PathJson(got), insight::PathJson(plain.Find(from, to, options)))
                << arch << " " << from << " -> " << to;
            ++stops[got.paths.empty() ? got.stop : "found"];
          }
        }
      }
    }
  }
  for (const std::string stop : {"found", "blocked", "needs_risk", "no_route", "same_release"}) {
    EXPECT_GT(stops[stop], 0u) << "no answer stops with " << stop << ": the graph does not test it";
  }
}

// PlanPaths end to end: the same answers as the views from the whole graph.
TEST_F(PathViewsTest, PlanPathsAnswersAsTheWholeGraphDoes) {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {V(1, 6), V(5, 7)}, {V(3, 3), V(3, 7)}, {V(2, 8), V(3, 5)}, {V(4, 1), V(4, 0)}, {V(2, 9), V(2, 9)}};
  for (const auto& channels : kChannelSets) {
    for (const auto& [from, to] : pairs) {
      insight::PathQuery q = Query(channels, "amd64", from);
      q.to = to;
      q.options.alternatives = 5;
      auto got = insight::PlanPaths(chain_, graph_, q);
      if (std::find(channels.begin(), channels.end(), "no-such-channel") != channels.end()) {
        // A channel the graph does not have is an error naming it, not an answer.
        ASSERT_FALSE(got.ok());
        EXPECT_EQ(got.status().message().rfind("unknown channel 'no-such-channel' (channels: candidate-4.1, ", 0), 0u)
            << got.status().message();
        continue;
      }
      ASSERT_TRUE(got.ok()) << got.status().message();
      const insight::BuilderRecords records(graph_, "amd64");
      PathAnswer want = insight::FindUpdatePaths(WholeGraphViews(q), records.removals(), from, to, q.options);
      EXPECT_EQ(insight::PathJson(*got), insight::PathJson(want)) << from << " -> " << to;
    }
  }
}

// Read lazily, the removed edges still say what blocks each path that needs them.
TEST_F(PathViewsTest, EachSparseChannelsDirectEdgeIsBlockedByItsFile) {
  for (int m = 1; m <= kMinors; ++m) {
    for (const std::string arch : {"amd64", "arm64"}) {
      insight::PathQuery q = Query({"sparse-4." + std::to_string(m), "risky-4.4"}, arch, V(m, 3));
      q.to = V(m, 7);
      auto answer = insight::PlanPaths(chain_, graph_, q);
      ASSERT_TRUE(answer.ok()) << answer.status().message();
      EXPECT_EQ(answer->stop, "blocked") << insight::PathJson(*answer);
      ASSERT_EQ(answer->blocked.size(), 1u) << insight::PathJson(*answer);
      EXPECT_NE(answer->blocked[0].why.find("blocked-edges/" + V(m, 7) + ".yaml"), std::string::npos)
          << answer->blocked[0].why;
    }
  }
}

}  // namespace
}  // namespace cincinnati
