// Per-cluster answers assembled from pieces (service/answer_pieces.h,
// http_server/pieced_document.h): byte for byte what the policy chain writes, for
// thousands of cluster ids at every instant where something changes and between them,
// plain and gzip, over random phased graphs with conditional edges.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>

#include <fmt/format.h>

#include "../fuzz/gunzip.h"
#include "core/graph_json.h"
#include "core/internal_metadata.h"
#include "core/metadata_keys.h"
#include "http_server/pieced_document.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"
#include "policy/phased_rollout.h"
#include "service/answer_pieces.h"
#include "service/view_cache.h"

namespace cincinnati {
namespace {

using http_server::PiecedDocument;

// One gzip member inflated (fuzz/gunzip.h); "" with a failure when it is not exactly one.
std::string Gunzip(const std::string& data) {
  std::optional<std::string> out = fuzz::Gunzip(data);
  EXPECT_TRUE(out.has_value()) << "not one valid gzip member";
  return out.value_or("");
}

// What the chain writes for `params`: the bytes every assembled answer must equal.
std::string ChainBytes(const TransformChain& chain, const Graph& graph, const Parameters& params) {
  TransformContext context;
  context.parameters = params;
  auto direct = RunChainOn(chain, graph, context);
  EXPECT_TRUE(direct.ok()) << direct.status().message();
  return direct.ok() ? WriteGraphJson(*direct, {.schema_version = 1}) : "";
}

// A cluster's parameters in channel "c" (no id when `id` is empty).
Parameters ClusterIn(const std::string& id) {
  Parameters params{{"channel", "c"}};
  if (!id.empty()) params["id"] = id;
  return params;
}

std::string RandomId(std::mt19937_64& rng) {
  uint64_t a = rng(), b = rng();
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xffff, b >> 48,
                     b & 0xffffffffffffULL);
}

TEST(PiecedDocumentTest, EverySequenceInflatesToThePlainDocument) {
  std::mt19937_64 rng(7);
  std::vector<std::string> pieces = {"", ",", "[12,34]", "{\"from\":\"4.1.0\",\"to\":\"4.2.0\"}", std::string(1, '\0')};
  std::string all_bytes;
  for (int c = 0; c < 256; ++c) all_bytes.push_back(static_cast<char>(c));
  pieces.push_back(all_bytes);
  pieces.push_back(std::string(70000, 'e'));  // one byte far more frequent than the rest: lengths must be limited
  for (const std::string& head : {std::string(), std::string("{\"version\":1,\"nodes\":[]"), std::string(100000, 'n')}) {
    PiecedDocument doc(head, pieces);
    for (int round = 0; round < 50; ++round) {
      std::vector<uint32_t> ids;
      const int n = static_cast<int>(rng() % 40);
      for (int i = 0; i < n; ++i) ids.push_back(static_cast<uint32_t>(rng() % pieces.size()));
      std::string plain = head;
      for (uint32_t id : ids) plain += pieces[id];
      ASSERT_TRUE(doc.Plain(ids) == plain);
      ASSERT_TRUE(Gunzip(doc.Gzip(ids)) == plain) << "head " << head.size() << " B, " << n << " pieces";
    }
  }
  // A single kind of byte, and no pieces at all, still make valid codes.
  PiecedDocument one("h", {"aaaa"});
  EXPECT_EQ(Gunzip(one.Gzip(std::vector<uint32_t>{0, 0})), "haaaaaaaa");
  PiecedDocument none("head", {});
  EXPECT_EQ(Gunzip(none.Gzip({})), "head");
}

TEST(PiecedDocumentTest, TheHeadIsCompressedAndPiecesCostAboutHalfTheirJson) {
  std::string head = "{\"version\":1,\"nodes\":[";
  for (int i = 0; i < 300; ++i) {
    head += fmt::format("{{\"version\":\"4.8.{}\",\"payload\":\"quay.io/openshift-release-dev/ocp-release@sha256:{:064x}\","
                        "\"metadata\":{{\"url\":\"https://access.redhat.com/errata/RHBA-2021:{:04d}\"}}}},",
                        i, i * 7919, i);
  }
  std::vector<std::string> pieces;
  std::vector<uint32_t> ids;
  std::string edges;
  for (int i = 0; i < 1000; ++i) {
    pieces.push_back(fmt::format("[{},{}],", i % 300, (i * 31) % 300));
    ids.push_back(static_cast<uint32_t>(i));
    edges += pieces.back();
  }
  PiecedDocument doc(head, pieces);
  const std::string gz = doc.Gzip(ids);
  EXPECT_TRUE(Gunzip(gz) == head + edges);
  EXPECT_LT(gz.size(), head.size() / 3 + edges.size() * 6 / 10) << "head " << head.size() << " B, edges " << edges.size();
}

// A random graph builder's graph in channel "c": releases 4.m.p with starts around t0,
// patch/minor/default windows, random edges and conditional edges.
struct PhasedFixture {
  Graph graph;
  std::set<int64_t> instants;  // every start, window opening and end, and neighbours
};

PhasedFixture RandomPhasedGraph(std::mt19937_64& rng, int64_t t0) {
  PhasedFixture f;
  const std::string channels_key = PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix);
  const std::string start_key = PrefixedKey(kDefaultKeyPrefix, kPhasedStartSuffix);
  const std::string rollouts_key = PrefixedKey(kDefaultKeyPrefix, kPhasedRolloutsSuffix);
  const int64_t day = 86400;
  std::vector<std::string> versions;
  const int count = 4 + static_cast<int>(rng() % 30);
  for (int i = 0; i < count; ++i) {
    std::string v = fmt::format("4.{}.{}", 7 + i / 10, i % 10);
    Metadata m;
    m[channels_key] = rng() % 8 ? "c" : "c,other";
    if (rng() % 6) {
      const int64_t start = t0 + static_cast<int64_t>(rng() % 30) * day / 2 - 10 * day;
      m[start_key] = EncodeChannelStart("c", start);
      f.instants.insert(start);
    }
    if (rng() % 3) {
      ChannelRollouts r{"c", {}};
      if (rng() % 2) r.rules.push_back({"patch", static_cast<int64_t>(1 + rng() % 4) * day});
      if (rng() % 2) r.rules.push_back({"minor", static_cast<int64_t>(1 + rng() % 20) * day});
      if (rng() % 3 == 0) r.rules.push_back({"*", static_cast<int64_t>(1 + rng() % 10) * day});
      if (!r.rules.empty()) m[rollouts_key] = EncodeChannelRollouts(r);
    }
    EXPECT_TRUE(f.graph.AddNode(Node::Concrete(v, "quay.io/r@sha256:" + std::to_string(i), m)).ok());
    versions.push_back(v);
  }
  std::vector<std::pair<int, int>> edges;
  for (int a = 0; a < count; ++a) {
    for (int b = a + 1; b < count; ++b) {
      if (rng() % 3 == 0) {
        EXPECT_TRUE(f.graph.AddEdge(a, b).ok());
        edges.emplace_back(a, b);
      }
    }
  }
  const int groups = static_cast<int>(rng() % 5);
  for (int g = 0; g < groups; ++g) {
    ConditionalEdge ce;
    const int refs = static_cast<int>(rng() % 4);  // an empty group too, now and then
    for (int r = 0; r < refs; ++r) {
      const int a = static_cast<int>(rng() % count), b = static_cast<int>(rng() % count);
      ce.edges.push_back({versions[std::min(a, b)], rng() % 7 ? versions[std::max(a, b)] : "9.9.9"});
    }
    ce.risks.push_back(Risk{"https://example.com/" + std::to_string(g), "Risk" + std::to_string(g), "message", {}});
    f.graph.mutable_conditional_edges().push_back(std::move(ce));
  }
  // Window openings and ends, as PhasedRollout sees them.
  auto windows = policy::RolloutWindows(f.graph);
  EXPECT_TRUE(windows.ok());
  for (const policy::RolloutWindow& w : *windows) {
    f.instants.insert(w.begin);
    f.instants.insert(w.begin + w.duration);
  }
  std::set<int64_t> around;
  for (int64_t t : f.instants) {
    around.insert({t - 1, t, t + 1, t + static_cast<int64_t>(rng() % day)});
  }
  f.instants = std::move(around);
  return f;
}

#ifdef CINCINNATI_SANITIZED
constexpr int kRandomIds = 25;  // the same graphs and instants, fewer clusters
#else
constexpr int kRandomIds = 60;
#endif

TEST(AnswerPiecesTest, EveryClusterAtEveryInstantGetsTheChainsBytes) {
  std::mt19937_64 rng(2021);
  const int64_t t0 = 1637712000;  // 2021-11-24
  std::vector<std::string> ids = {"", "not-a-uuid", "00000000-0000-0000-0000-000000000000"};
  for (int i = 0; i < kRandomIds; ++i) ids.push_back(RandomId(rng));
  size_t compared = 0, per_cluster_spans = 0;
  for (int round = 0; round < 12; ++round) {
    PhasedFixture f = RandomPhasedGraph(rng, t0);
    auto shared = std::make_shared<const Graph>(f.graph);
    for (int64_t now : f.instants) {
      TransformChain chain;
      chain.push_back(std::make_unique<policy::ChannelFilter>());
      chain.push_back(std::make_unique<policy::PhasedRollout>(env::ManualClock::AtUnixSeconds(now)));
      server::ViewCache cache(chain, shared);
      std::map<std::string, std::string> body_of_etag;
      uint64_t assembled = 0;
      std::set<std::string> bodies;
      for (const std::string& id : ids) {
        const Parameters params = ClusterIn(id);
        const std::string expected = ChainBytes(chain, f.graph, params);
        auto view = cache.Get(params);
        ASSERT_TRUE(view.ok()) << view.status().message();
        ASSERT_EQ(*(*view)->body(), expected) << "round " << round << " now " << now << " id '" << id << "'";
        ASSERT_EQ(Gunzip(*(*view)->Gzip()), expected) << "round " << round << " now " << now << " id '" << id << "'";
        EXPECT_EQ(cache.assembled(), ++assembled) << "answered from pieces";
        auto [it, inserted] = body_of_etag.emplace((*view)->etag(), expected);
        EXPECT_EQ(it->second, expected) << "one ETag for two documents";
        bodies.insert(expected);
        ++compared;
      }
      per_cluster_spans += bodies.size() > 1;
    }
  }
  EXPECT_GT(compared, 2500u);
  EXPECT_GT(per_cluster_spans, 20u) << "the graphs must give clusters different answers at many instants";
}

// One cache whose clock moves back and forth: pieces cut at one instant serve the
// others of their span, and are cut again when time leaves it.
TEST(AnswerPiecesTest, OneCacheWhoseClockMovesBothWays) {
  std::mt19937_64 rng(99);
  std::vector<std::string> ids = {"", "not-a-uuid"};
  for (int i = 0; i < 20; ++i) ids.push_back(RandomId(rng));
  for (int round = 0; round < 6; ++round) {
    PhasedFixture f = RandomPhasedGraph(rng, 1637712000);
    const auto clock = env::ManualClock::AtUnixSeconds(0);
    TransformChain chain;
    chain.push_back(std::make_unique<policy::ChannelFilter>());
    chain.push_back(std::make_unique<policy::PhasedRollout>(clock));
    server::ViewCache cache(chain, std::make_shared<const Graph>(f.graph));
    std::vector<int64_t> instants(f.instants.begin(), f.instants.end());
    for (size_t i = 0, n = instants.size(); i < n; ++i) instants.push_back(instants[i] + static_cast<int64_t>(rng() % 7200));
    std::shuffle(instants.begin(), instants.end(), rng);
    uint64_t requests = 0;
    for (int64_t t : instants) {
      clock->SetNow(env::Clock::SystemTime(std::chrono::seconds(t)));
      for (const std::string& id : ids) {
        const Parameters params = ClusterIn(id);
        const std::string expected = ChainBytes(chain, f.graph, params);
        auto view = cache.Get(params);
        ASSERT_TRUE(view.ok());
        ASSERT_EQ(*(*view)->body(), expected) << "now " << t << " id " << id;
        ASSERT_EQ(Gunzip(*(*view)->Gzip()), expected) << "now " << t << " id " << id;
        ++requests;
      }
    }
    EXPECT_EQ(cache.assembled(), requests);
  }
}

// Pieces are cut for one channel: a chain whose cacheable steps do not read the channel
// (so one entry serves every channel) runs the phased step per request instead.
TEST(AnswerPiecesTest, PiecesBelongToOneChannel) {
  const int64_t t0 = 1637712000, day = 86400;
  const std::string start_key = PrefixedKey(kDefaultKeyPrefix, kPhasedStartSuffix);
  Graph g;
  for (const char* v : {"4.1.0", "4.1.1"}) {
    Metadata m{{std::string(kArchKey), "amd64"}, {start_key, fmt::format("a={},b={}", t0, t0 + 10 * day)}};
    ASSERT_TRUE(g.AddNode(Node::Concrete(v, "p", m)).ok());
  }
  ASSERT_TRUE(g.AddEdge(0, 1).ok());
  TransformChain chain;
  chain.push_back(std::make_unique<policy::ArchFilter>());
  chain.push_back(std::make_unique<policy::PhasedRollout>(env::ManualClock::AtUnixSeconds(t0 + day)));
  server::ViewCache cache(chain, std::make_shared<const Graph>(g));
  std::set<std::string> answers;
  for (const char* channel : {"a", "b", "a"}) {
    Parameters p{{"channel", channel}, {"arch", "amd64"}};
    auto cached = cache.Get(p);
    ASSERT_TRUE(cached.ok());
    EXPECT_EQ(*(*cached)->body(), ChainBytes(chain, g, p)) << channel;
    answers.insert(*(*cached)->body());
  }
  EXPECT_EQ(answers.size(), 2u) << "channel b has not started";
  EXPECT_EQ(cache.assembled(), 0u);
}

TEST(AnswerPiecesTest, ASpanEndsWhereSomethingChanges) {
  std::mt19937_64 rng(5);
  PhasedFixture f = RandomPhasedGraph(rng, 1637712000);
  policy::PhasedRollout step(env::ManualClock::AtUnixSeconds(0));
  for (int64_t now : f.instants) {
    auto span = step.SpanAt(f.graph, {{"channel", "c"}}, now);
    ASSERT_TRUE(span.ok()) << span.status().message();
    EXPECT_TRUE(span->Contains(now));
    // Instants of change bound spans: none lies strictly inside (from, until).
    for (int64_t t : f.instants) {
      if (t > span->from && t < span->until) {
        auto other = step.SpanAt(f.graph, {{"channel", "c"}}, t);
        ASSERT_TRUE(other.ok());
        EXPECT_EQ(WriteGraphJson(other->widest), WriteGraphJson(span->widest)) << now << " and " << t;
      }
    }
  }
  EXPECT_FALSE(step.SpanAt(f.graph, {}, 0).ok()) << "no channel";
}

}  // namespace
}  // namespace cincinnati
