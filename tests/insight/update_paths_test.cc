// Update paths (src/insight/update_paths.h) checked against an independent
// breadth-first search on the served views: the reference's own answers
// (policy-engine-golden) and the bundled examples.
#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <map>
#include <set>

#include "core/graph_json.h"
#include "core/semver.h"
#include "graph-data/file_reader.h"
#include "insight/queries.h"
#include "insight/update_paths.h"
#include "policy/default_chain.h"
#include "policy/phased_rollout.h"
#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using insight::PathAnswer;
using insight::PathQuery;

TransformChain DefaultChain() { return policy::DefaultChain({}, env::ManualClock::AtUnixSeconds(1800000000)); }

// The hops a cluster may take in `view`: edges, and conditional edges when every risk is accepted.
std::map<std::string, std::map<std::string, std::vector<std::string>>> Usable(const Graph& view,
                                                                            const std::set<std::string>& accepted) {
  std::map<std::string, std::map<std::string, std::vector<std::string>>> out;
  for (const Node& n : view.nodes()) out[n.version];
  for (const Edge& e : view.Edges()) out[view.node(e.from).version][view.node(e.to).version] = {};
  for (const ConditionalEdge& group : view.conditional_edges()) {
    bool ok = true;
    std::vector<std::string> names;
    for (const Risk& r : group.risks) {
      names.push_back(r.name);
      if (!accepted.count("*") && !accepted.count(r.name)) ok = false;
    }
    if (!ok) continue;
    for (const ConditionalEdgeRef& ref : group.edges) {
      if (!out[ref.from].count(ref.to)) out[ref.from][ref.to] = names;
    }
  }
  return out;
}

// Hops from `from` to every release (breadth-first).
std::map<std::string, size_t> Distances(const std::map<std::string, std::map<std::string, std::vector<std::string>>>& g,
                                        const std::string& from) {
  std::map<std::string, size_t> dist{{from, 0}};
  std::deque<std::string> queue{from};
  while (!queue.empty()) {
    std::string v = queue.front();
    queue.pop_front();
    auto it = g.find(v);
    if (it == g.end()) continue;
    for (const auto& next : it->second) {
      if (dist.emplace(next.first, dist[v] + 1).second) queue.push_back(next.first);
    }
  }
  return dist;
}

// Every returned path is a chain of usable hops from `from` to `to`; the first is as
// short as breadth-first search says; alternatives are distinct and never shorter.
void ExpectPathsValid(const Graph& view, const std::set<std::string>& accepted, size_t k) {
  auto usable = Usable(view, accepted);
  auto shared = std::make_shared<const Graph>(view);
  insight::PathOptions options;
  options.accepted_risks.assign(accepted.begin(), accepted.end());
  options.alternatives = k;
  size_t found = 0, missing = 0;
  insight::PathFinder finder({{"c", shared}}, {});
  for (const Node& a : view.nodes()) {
    auto dist = Distances(usable, a.version);
    for (const Node& b : view.nodes()) {
      if (a.version == b.version) continue;
      PathAnswer answer = finder.Find(a.version, b.version, options);
      SCOPED_TRACE(a.version + " -> " + b.version);
      auto d = dist.find(b.version);
      if (d == dist.end()) {
        ++missing;
        EXPECT_TRUE(answer.paths.empty());
        EXPECT_FALSE(answer.stop.empty());
        EXPECT_FALSE(answer.message.empty());
        continue;
      }
      ++found;
      ASSERT_FALSE(answer.paths.empty());
      EXPECT_EQ(answer.paths[0].hops.size(), d->second);
      std::set<std::vector<std::string>> seen;
      size_t previous = 0;
      for (const auto& path : answer.paths) {
        EXPECT_GE(path.hops.size(), previous);
        previous = path.hops.size();
        std::vector<std::string> releases{a.version};
        for (const auto& hop : path.hops) {
          ASSERT_EQ(hop.from, releases.back());
          auto from = usable.find(hop.from);
          ASSERT_TRUE(from != usable.end() && from->second.count(hop.to)) << hop.from << " -> " << hop.to;
          EXPECT_EQ(hop.risks, from->second.at(hop.to));
          releases.push_back(hop.to);
        }
        EXPECT_EQ(releases.back(), b.version);
        EXPECT_TRUE(seen.insert(releases).second) << "a path listed twice";
      }
    }
  }
  EXPECT_GT(found, 0u);
  ::testing::Test::RecordProperty("pairs_with_path", static_cast<int>(found));
  ::testing::Test::RecordProperty("pairs_without", static_cast<int>(missing));
}

TEST(UpdatePathsTest, ShortestOnEveryPairOfTheReferencesServedViews) {
  const fs::path dir = testing::Fixtures() / "policy-engine-golden";
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().filename().string());
    auto text = graphdata::ReadFileToString(entry.path());
    ASSERT_TRUE(text.ok());
    auto view = ReadGraphJson(*text);
    ASSERT_TRUE(view.ok()) << view.status().message();
    ExpectPathsValid(*view, {}, 1);
    ++files;
  }
  EXPECT_GE(files, 7u);
}

TEST(UpdatePathsTest, AlternativesAndAcceptedRisksOnTheReferencesStable47) {
  auto text = graphdata::ReadFileToString(testing::Fixtures() / "policy-engine-golden" /
                                          "134475077ed4eeaedf3c339f12915b9cdaf7d194_stable-4.7_amd64_v1.json");
  ASSERT_TRUE(text.ok());
  auto view = ReadGraphJson(*text);
  ASSERT_TRUE(view.ok());
  ASSERT_FALSE(view->conditional_edges().empty());
  ExpectPathsValid(*view, {"*"}, 3);
}

// Among the shortest paths the first prefers newer releases, hop by hop: checked
// against every shortest path enumerated by brute force.
TEST(UpdatePathsTest, TiesGoToNewerIntermediateReleases) {
  auto graph = testing::BuildLocal(testing::Examples() / "ocp-4x/releases", testing::Examples() / "ocp-4x/graph-data");
  ASSERT_TRUE(graph.ok());
  TransformChain chain = DefaultChain();
  size_t ties = 0;
  for (const std::string channel : {"fast-4.13", "stable-4.13", "candidate-4.13", "stable-4.12"}) {
    TransformContext context;
    context.parameters = {{"channel", channel}};
    auto view = RunChainOn(chain, *graph, context);
    ASSERT_TRUE(view.ok());
    auto usable = Usable(*view, {});
    auto shared = std::make_shared<const Graph>(*view);
    for (const Node& a : view->nodes()) {
      auto dist = Distances(usable, a.version);
      for (const auto& entry : dist) {
        const auto& to = entry.first;  // named, not bound: clang 14 cannot capture bindings
        const auto hops = entry.second;
        if (hops < 2) continue;
        // Every shortest path, by depth-first search along the distance layers.
        std::vector<std::vector<std::string>> all;
        std::function<void(std::vector<std::string>&)> walk = [&](std::vector<std::string>& path) {
          if (path.size() == hops + 1) {
            if (path.back() == to) all.push_back(path);
            return;
          }
          for (const auto& next : usable[path.back()]) {
            path.push_back(next.first);
            walk(path);
            path.pop_back();
          }
        };
        std::vector<std::string> start{a.version};
        walk(start);
        auto newer = [](const std::vector<std::string>& x, const std::vector<std::string>& y) {
          for (size_t i = 0; i < x.size(); ++i) {
            if (x[i] != y[i]) return *Version::Parse(y[i]) < *Version::Parse(x[i]);
          }
          return false;
        };
        std::sort(all.begin(), all.end(), newer);
        PathAnswer answer = insight::FindUpdatePaths({{channel, shared}}, {}, a.version, to, {{}, all.size(), 1000});
        ASSERT_EQ(answer.paths.size(), all.size()) << channel << " " << a.version << " -> " << to;
        if (all.size() > 1) ++ties;
        for (size_t i = 0; i < all.size(); ++i) {
          std::vector<std::string> got{a.version};
          for (const auto& hop : answer.paths[i].hops) got.push_back(hop.to);
          EXPECT_EQ(got, all[i]) << channel << " " << a.version << " -> " << to << " #" << i;
        }
      }
    }
  }
  EXPECT_GT(ties, 0u) << "no pair with several shortest paths: the example does not test the tie rule";
}

class PlanPathsTest : public ::testing::Test {
 protected:
  PathAnswer Plan(Parameters params, const ClusterEntitlements& entitlements = {}) {
    auto query = insight::ParsePathQuery(params);
    EXPECT_TRUE(query.ok()) << query.status().message();
    auto answer = insight::PlanPaths(chain_, graph_, *query, [&](std::string_view) { return entitlements; });
    EXPECT_TRUE(answer.ok()) << answer.status().message();
    return answer.ok() ? std::move(answer).value() : PathAnswer();
  }
  static std::vector<std::string> Releases(const insight::UpdatePath& path) {
    std::vector<std::string> out{path.hops.at(0).from};
    for (const auto& hop : path.hops) out.push_back(hop.to);
    return out;
  }
  void SetUp() override {
    auto graph = testing::BuildLocal(testing::Examples() / "ocp-4x/releases", testing::Examples() / "ocp-4x/graph-data");
    ASSERT_TRUE(graph.ok());
    graph_ = std::move(graph).value();
  }
  Graph graph_;
  TransformChain chain_ = DefaultChain();
};

TEST_F(PlanPathsTest, AcceptingARiskTakesTheConditionalEdge) {
  Parameters base{{"channel", "stable-4.13"}, {"from", "4.12.3"}, {"to", "4.13.2"}};
  PathAnswer plain = Plan(base);
  ASSERT_EQ(plain.paths.size(), 1u) << insight::PathJson(plain);
  EXPECT_EQ(Releases(plain.paths[0]), (std::vector<std::string>{"4.12.3", "4.13.0", "4.13.2"}));
  for (const auto& hop : plain.paths[0].hops) EXPECT_TRUE(hop.risks.empty());
  base["accept"] = "ExampleIngressRisk";
  PathAnswer risky = Plan(base);
  ASSERT_EQ(risky.paths.size(), 1u);
  EXPECT_EQ(Releases(risky.paths[0]), (std::vector<std::string>{"4.12.3", "4.13.2"}));
  EXPECT_EQ(risky.paths[0].hops[0].risks, std::vector<std::string>{"ExampleIngressRisk"});
  base["accept"] = "*";
  EXPECT_EQ(Releases(Plan(base).paths.at(0)), (std::vector<std::string>{"4.12.3", "4.13.2"}));
  base["accept"] = "SomethingElse";
  base["k"] = "3";
  PathAnswer three = Plan(base);
  EXPECT_EQ(three.paths.size(), 3u);
  for (const auto& p : three.paths) {
    for (const auto& hop : p.hops) EXPECT_TRUE(hop.risks.empty()) << insight::PathJson(three);
  }
}

TEST_F(PlanPathsTest, AHotfixCustomersPathUsesTheHotfixOnlyForThatCustomer) {
  Parameters q{{"channel", "stable-4.13"}, {"from", "4.12.3"}, {"to", "4.13.2"},
               {"id", "0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60"}};
  ClusterEntitlements acme;
  acme.hotfixes = {"acme-etcd-defrag"};
  PathAnswer customer = Plan(q, acme);
  ASSERT_FALSE(customer.paths.empty());
  EXPECT_EQ(Releases(customer.paths[0]), (std::vector<std::string>{"4.12.3", "4.13.1-hotfix.1", "4.13.2"}));
  q["k"] = "10";
  for (const auto& path : Plan(q).paths) {
    for (const std::string& v : Releases(path)) EXPECT_EQ(v.find("hotfix"), std::string::npos);
  }
}

TEST_F(PlanPathsTest, APathCrossesChannelsWhenAsked) {
  Parameters q{{"channel", "stable-4.12,stable-4.13"}, {"from", "4.12.0"}, {"to", "4.13.2"}};
  PathAnswer answer = Plan(q);
  ASSERT_FALSE(answer.paths.empty()) << insight::PathJson(answer);
  const auto& hops = answer.paths[0].hops;
  EXPECT_EQ(hops.front().channel, "stable-4.12");
  EXPECT_EQ(hops.back().channel, "stable-4.13");
  EXPECT_EQ(hops.size(), 3u) << insight::PathText(answer);
  // One channel alone does not hold 4.12.0.
  q["channel"] = "stable-4.13";
  PathAnswer one = Plan(q);
  EXPECT_TRUE(one.paths.empty());
  EXPECT_EQ(one.stop, "not_in_channel");
  EXPECT_NE(one.message.find("4.12.0 is not a release of channel stable-4.13"), std::string::npos) << one.message;
}

TEST(PathStopsTest, NeedsRiskBlockedAndNoRouteSayWhatStopsThem) {
  testing::TempDir dir;
  auto release = [&](const std::string& v, const std::string& previous) {
    testing::WriteFile(dir / ("releases/" + v + ".json"),
                       R"({"kind":"cincinnati-metadata-v0","version":")" + v + R"(","previous":[)" + previous +
                           R"(],"metadata":{},"payload":"quay.io/x/y@sha256:)" + std::string(64, 'b') + "\"}");
  };
  release("1.0.0", "");
  release("1.0.1", R"("1.0.0")");
  release("1.1.0", R"("1.0.0","1.0.1")");
  testing::WriteFile(dir / "graph-data/version", "1.0.0\n");
  testing::WriteFile(dir / "graph-data/raw/metadata.json", "{}");
  testing::WriteFile(dir / "graph-data/channels/a-1.yaml", "name: a-1\nversions: [1.0.0, 1.0.1, 1.1.0]\n");
  testing::WriteFile(dir / "graph-data/blocked-edges/1.0.1.yaml",
                     "to: 1.0.1\nfrom: .*\nurl: https://example.com/r\nname: R1\nmessage: m\nmatchingRules:\n"
                     "- type: Always\n");
  testing::WriteFile(dir / "graph-data/blocked-edges/1.1.0.yaml", "to: 1.1.0\nfrom: 1[.]0[.]0\n");
  auto graph = testing::BuildLocal(dir / "releases", dir / "graph-data");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  TransformChain chain = DefaultChain();
  auto plan = [&](Parameters p) {
    auto answer = insight::PlanPaths(chain, *graph, *insight::ParsePathQuery(p));
    EXPECT_TRUE(answer.ok());
    return *answer;
  };
  // 1.0.0 -> 1.1.0 is blocked; the way round through 1.0.1 needs R1.
  PathAnswer needs = plan({{"channel", "a-1"}, {"from", "1.0.0"}, {"to", "1.1.0"}});
  EXPECT_EQ(needs.stop, "needs_risk") << insight::PathJson(needs);
  EXPECT_EQ(needs.needed_risks, std::vector<std::string>{"R1"});
  ASSERT_TRUE(needs.would_take.has_value());
  EXPECT_EQ(needs.would_take->hops.size(), 2u);
  EXPECT_NE(insight::PathText(needs).find("accept=R1"), std::string::npos);
  PathAnswer accepted = plan({{"channel", "a-1"}, {"from", "1.0.0"}, {"to", "1.1.0"}, {"accept", "R1"}});
  ASSERT_EQ(accepted.paths.size(), 1u);
  EXPECT_EQ(accepted.paths[0].hops[0].risks, std::vector<std::string>{"R1"});
  // 1.0.0 -> 1.1.0 directly once 1.0.1 is out of the channel: blocked, naming the file.
  testing::WriteFile(dir / "graph-data/channels/b-1.yaml", "name: b-1\nversions: [1.0.0, 1.1.0]\n");
  graph = testing::BuildLocal(dir / "releases", dir / "graph-data");
  ASSERT_TRUE(graph.ok());
  PathAnswer blocked = plan({{"channel", "b-1"}, {"from", "1.0.0"}, {"to", "1.1.0"}});
  EXPECT_EQ(blocked.stop, "blocked") << insight::PathJson(blocked);
  ASSERT_EQ(blocked.blocked.size(), 1u);
  EXPECT_NE(blocked.blocked[0].why.find("blocked-edges/1.1.0.yaml"), std::string::npos);
  EXPECT_NE(blocked.message.find("blocked-edges/1.1.0.yaml"), std::string::npos);
  // Backwards: no route, and why.
  PathAnswer back = plan({{"channel", "a-1"}, {"from", "1.1.0"}, {"to", "1.0.0"}});
  EXPECT_EQ(back.stop, "no_route");
  EXPECT_NE(back.message.find("older"), std::string::npos) << back.message;
  EXPECT_EQ(plan({{"channel", "a-1"}, {"from", "1.0.0"}, {"to", "1.0.0"}}).stop, "same_release");
}

}  // namespace
}  // namespace cincinnati
