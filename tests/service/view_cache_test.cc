// The view cache's byte budget (service/view_cache.h, service/clock_cache.h): CLOCK's
// eviction order, the budget held after every insert, hits, misses and evictions
// counted, an evicted key computed again to the chain's bytes, a view equal to a
// precomputed one shared, concurrent misses of one key run once, and readers racing
// inserts over a budget far smaller than the keys asked.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/graph_json.h"
#include "core/metadata_keys.h"
#include "http_server/metrics.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"
#include "policy/channel_target.h"
#include "service/clock_cache.h"
#include "service/view_cache.h"

namespace cincinnati {
namespace {

using server::ClockCache;

TEST(ClockCacheTest, AReferencedEntryGetsASecondChance) {
  ClockCache<const int> cache(300);
  for (int i = 0; i < 3; ++i) cache.Insert(std::to_string(i), std::make_shared<const int>(i), 100);
  ASSERT_NE(cache.Find("0"), nullptr);  // marks 0: the hand passes it once
  size_t evicted = 0;
  cache.Insert("3", std::make_shared<const int>(3), 100, &evicted);
  EXPECT_EQ(evicted, 1u);
  EXPECT_NE(cache.Find("0"), nullptr) << "the referenced entry was evicted first";
  EXPECT_EQ(cache.Find("1"), nullptr) << "the oldest unreferenced entry goes first";
  EXPECT_NE(cache.Find("2"), nullptr);
  EXPECT_NE(cache.Find("3"), nullptr);
  EXPECT_EQ(cache.bytes(), 300u);
  EXPECT_EQ(cache.evictions(), 1u);
}

TEST(ClockCacheTest, TheBudgetHoldsAfterEveryInsert) {
  ClockCache<const std::string> cache(10'000);
  std::mt19937 rng(7);
  size_t kept_total = 0;
  for (int i = 0; i < 2000; ++i) {
    const size_t cost = 1 + rng() % 3000;
    const std::string key = std::to_string(rng() % 500);
    cache.Insert(key, std::make_shared<const std::string>(key), cost);
    if (rng() % 2) cache.Find(std::to_string(rng() % 500));
    ASSERT_LE(cache.bytes(), 10'000u) << "after insert " << i;
    kept_total += cache.entries();
  }
  EXPECT_GT(kept_total, 2000u) << "the cache kept next to nothing";
  EXPECT_GT(cache.evictions(), 0u);
}

TEST(ClockCacheTest, AnEntryOverTheBudgetIsNotKeptAndEvictsNothing) {
  ClockCache<const int> cache(100);
  cache.Insert("a", std::make_shared<const int>(1), 60);
  auto big = std::make_shared<const int>(2);
  EXPECT_EQ(cache.Insert("b", big, 101), big);
  EXPECT_EQ(cache.Find("b"), nullptr);
  EXPECT_NE(cache.Find("a"), nullptr);
  EXPECT_EQ(cache.evictions(), 0u);
}

// Channel "c": releases 4.1.0 ... 4.1.<n-1> in a line, the newest the target: each
// version's channel-target view differs (the paths from it to the target).
Graph LineGraph(int n) {
  Graph g;
  const std::string channels = PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix);
  for (int i = 0; i < n; ++i) {
    Metadata m{{std::string(kArchKey), "amd64"}, {channels, "c"}};
    EXPECT_TRUE(g.AddNode(Node::Concrete(fmt::format("4.1.{}", i), fmt::format("p{}", i), m)).ok());
    if (i > 0) {
      EXPECT_TRUE(g.AddEdge(i - 1, i).ok());
    }
  }
  return g;
}

TransformChain TargetChain() {
  TransformChain chain;
  chain.push_back(std::make_unique<policy::ChannelFilter>());
  chain.push_back(std::make_unique<policy::ArchFilter>());
  chain.push_back(std::make_unique<policy::ChannelTarget>(std::set<std::string>{"*"}));
  return chain;
}

Parameters At(int version) {
  return {{"channel", "c"}, {"arch", "amd64"}, {"version", fmt::format("4.1.{}", version)}};
}

std::string ChainBytes(const TransformChain& chain, const Graph& graph, const Parameters& params) {
  TransformContext context;
  context.parameters = params;
  auto direct = RunChainOn(chain, graph, context);
  EXPECT_TRUE(direct.ok()) << direct.status().message();
  return direct.ok() ? WriteGraphJson(*direct, {.schema_version = 1}) : "";
}

struct Counters {
  server::Registry registry{"test_"};
  server::Counter& hits = registry.AddCounter("hits_total", "h").Get();
  server::Counter& misses = registry.AddCounter("misses_total", "m").Get();
  server::Counter& evictions = registry.AddCounter("evictions_total", "e").Get();
  server::ViewCacheCounters sink() { return {&hits, &misses, &evictions}; }
};

TEST(ViewCacheTest, AnEvictedViewIsComputedAgainAndEveryStepIsCounted) {
  const Graph graph = LineGraph(40);
  const TransformChain chain = TargetChain();
  Counters counters;
  // Room for a few views of this graph: far fewer than the 40 asked.
  server::ViewCache cache(chain, std::make_shared<const Graph>(graph), 6 * 1024, 0, counters.sink());
  EXPECT_GT(cache.Precompute(PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix), std::string(kArchKey)), 0u);
  ASSERT_TRUE(cache.Get({{"channel", "c"}, {"arch", "amd64"}}).ok());
  EXPECT_EQ(counters.hits.value(), 1) << "a precomputed view is a hit";
  for (int v = 0; v < 40; ++v) {
    auto view = cache.Get(At(v));
    ASSERT_TRUE(view.ok());
    EXPECT_EQ(*(*view)->body(), ChainBytes(chain, graph, At(v)));
    ASSERT_LE(cache.kept_bytes(), 6u * 1024);
  }
  EXPECT_EQ(counters.misses.value(), 40);
  EXPECT_GT(cache.kept_entries(), 1u);
  EXPECT_LT(cache.kept_entries(), 40u);
  EXPECT_EQ(counters.evictions.value(), static_cast<double>(cache.evictions()));
  EXPECT_EQ(cache.evictions(), 40u - cache.kept_entries());
  // The last view is kept (a hit); the first was evicted: computed again, same bytes.
  ASSERT_TRUE(cache.Get(At(39)).ok());
  EXPECT_EQ(counters.hits.value(), 2);
  auto again = cache.Get(At(0));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(counters.misses.value(), 41);
  EXPECT_EQ(*(*again)->body(), ChainBytes(chain, graph, At(0)));
  ASSERT_TRUE(cache.Get(At(0)).ok());
  EXPECT_EQ(counters.hits.value(), 3) << "the view computed again is kept again";
}

TEST(ViewCacheTest, ABudgetThatHoldsEveryViewComputesEachOnce) {
  const Graph graph = LineGraph(30);
  const TransformChain chain = TargetChain();
  Counters counters;
  server::ViewCache cache(chain, std::make_shared<const Graph>(graph), server::ViewCache::kDefaultMaxBytes, 0,
                          counters.sink());
  for (int pass = 0; pass < 3; ++pass) {
    for (int v = 0; v < 30; ++v) ASSERT_TRUE(cache.Get(At(v)).ok());
  }
  EXPECT_EQ(counters.misses.value(), 30);
  EXPECT_EQ(counters.hits.value(), 60);
  EXPECT_EQ(counters.evictions.value(), 0);
  EXPECT_EQ(cache.kept_entries(), 30u);
  // The stated estimate: at least each body, its gzip estimate and the bookkeeping.
  size_t bodies = 0;
  for (int v = 0; v < 30; ++v) bodies += ChainBytes(chain, graph, At(v)).size();
  EXPECT_GE(cache.kept_bytes(), bodies + bodies / 4 + 30 * 512);
}

TEST(ViewCacheTest, AVersionNotInTheChannelSharesTheChannelsPrecomputedView) {
  const Graph graph = LineGraph(20);
  const TransformChain chain = TargetChain();
  Counters counters;
  server::ViewCache cache(chain, std::make_shared<const Graph>(graph), server::ViewCache::kDefaultMaxBytes, 0,
                          counters.sink());
  ASSERT_GT(cache.Precompute(PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix), std::string(kArchKey)), 0u);
  auto channel = cache.Get({{"channel", "c"}, {"arch", "amd64"}});
  ASSERT_TRUE(channel.ok());
  const Parameters elsewhere{{"channel", "c"}, {"arch", "amd64"}, {"version", "5.0.0"}};
  auto shared = cache.Get(elsewhere);
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(*(*shared)->body(), ChainBytes(chain, graph, elsewhere));
  EXPECT_EQ(*shared, *channel) << "a copy of the channel's view was kept";
  EXPECT_EQ(cache.kept_entries(), 1u);
  EXPECT_LT(cache.kept_bytes(), 1024u) << "the shared view was charged again";
  ASSERT_TRUE(cache.Get(elsewhere).ok());
  EXPECT_EQ(counters.misses.value(), 1);
  EXPECT_EQ(counters.hits.value(), 2);
  // A version in the channel gets a view of its own, charged in full.
  ASSERT_TRUE(cache.Get(At(3)).ok());
  EXPECT_GT(cache.kept_bytes(), ChainBytes(chain, graph, At(3)).size());
}

// A cacheable step that counts its runs and holds each until the gate opens.
class GatedStep : public GraphTransform {
 public:
  std::string_view name() const override { return "gated"; }
  Result<Graph> Apply(Graph graph, TransformContext&) const override {
    runs.fetch_add(1);
    std::unique_lock lock(mu);
    opened_cv.wait(lock, [&] { return opened; });
    return graph;
  }
  std::optional<std::vector<std::string>> cache_key_parameters() const override {
    return std::vector<std::string>{"channel"};
  }
  void Open() const {
    {
      std::lock_guard lock(mu);
      opened = true;
    }
    opened_cv.notify_all();
  }
  mutable std::atomic<int> runs{0};

 private:
  mutable std::mutex mu;
  mutable std::condition_variable opened_cv;
  mutable bool opened = false;
};

TEST(ViewCacheTest, ConcurrentMissesOfOneKeyRunTheChainOnce) {
  const Graph graph = LineGraph(5);
  TransformChain chain;
  chain.push_back(std::make_unique<GatedStep>());
  const auto& gate = static_cast<const GatedStep&>(*chain[0]);
  Counters counters;
  server::ViewCache cache(chain, std::make_shared<const Graph>(graph), server::ViewCache::kDefaultMaxBytes, 0,
                          counters.sink());
  constexpr int kThreads = 4;
  std::vector<std::string> bodies(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto view = cache.Get({{"channel", "c"}});
      if (view.ok()) bodies[t] = *(*view)->body();
    });
  }
  // One runs the step; the others wait for it, then the gate opens.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((gate.runs.load() < 1 || cache.waiting() < kThreads - 1) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_EQ(cache.waiting(), static_cast<size_t>(kThreads - 1));
  gate.Open();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(gate.runs.load(), 1);
  EXPECT_EQ(counters.misses.value(), 1);
  EXPECT_EQ(counters.hits.value(), kThreads - 1);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(bodies[t], bodies[0]) << t;
  EXPECT_FALSE(bodies[0].empty());
}

TEST(ViewCacheTest, TwoChannelsWithEqualAnswersKeepTheirOwnViews) {
  // Channels "a" and "b" hold the same releases: equal answers, but pieces (phased
  // rollouts) are cut per channel, so "b"'s request must share "b"'s view, not "a"'s.
  Graph graph;
  const std::string channels = PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix);
  for (int i = 0; i < 3; ++i) {
    Metadata m{{std::string(kArchKey), "amd64"}, {channels, "a,b"}};
    ASSERT_TRUE(graph.AddNode(Node::Concrete(fmt::format("4.1.{}", i), fmt::format("p{}", i), m)).ok());
  }
  const TransformChain chain = TargetChain();
  server::ViewCache cache(chain, std::make_shared<const Graph>(graph));
  ASSERT_EQ(cache.Precompute(channels, std::string(kArchKey)), 2u);
  auto a = cache.Get({{"channel", "a"}, {"arch", "amd64"}});
  auto b = cache.Get({{"channel", "b"}, {"arch", "amd64"}});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(*(*a)->body(), *(*b)->body());
  auto elsewhere = cache.Get({{"channel", "b"}, {"arch", "amd64"}, {"version", "5.0.0"}});
  ASSERT_TRUE(elsewhere.ok());
  EXPECT_EQ(*elsewhere, *b);
  EXPECT_NE(*elsewhere, *a);
}

TEST(ViewCacheTest, ReadersRaceInsertsOverASmallBudget) {
  const Graph graph = LineGraph(60);
  const TransformChain chain = TargetChain();
  std::vector<std::string> want;
  for (int v = 0; v < 60; ++v) want.push_back(ChainBytes(chain, graph, At(v)));
  Counters counters;
  server::ViewCache cache(chain, std::make_shared<const Graph>(graph), 32 * 1024, 0, counters.sink());
  constexpr int kThreads = 4, kRequests = 400;
  std::vector<int> wrong(kThreads, 0), over_budget(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < kRequests; ++i) {
        // A few hot versions (recent ones: small views) and a long tail, as clients ask.
        const int v = rng() % 4 == 0 ? static_cast<int>(rng() % 60) : 55 + static_cast<int>(rng() % 5);
        auto view = cache.Get(At(v));
        if (!view.ok() || *(*view)->body() != want[v]) ++wrong[t];
        if (cache.kept_bytes() > 32 * 1024) ++over_budget[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(wrong[t], 0) << "thread " << t;
    EXPECT_EQ(over_budget[t], 0) << "thread " << t;
  }
  EXPECT_EQ(counters.hits.value() + counters.misses.value(), kThreads * kRequests);
  EXPECT_GT(counters.hits.value(), counters.misses.value()) << "the hot versions stay kept";
  EXPECT_GT(cache.evictions(), 0u) << "the budget was not small enough to evict";
  EXPECT_EQ(counters.evictions.value(), static_cast<double>(cache.evictions()));
}

}  // namespace
}  // namespace cincinnati
