// Explanations and update paths (src/insight) against the views the policy chain
// serves: on the bundled examples, on graphs built from graph-data written here for
// each cause, and on the reference's served answers (policy-engine-golden).
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <set>

#include "builder/node_remove.h"
#include "core/graph_json.h"
#include "core/internal_metadata.h"
#include "core/strings.h"
#include "graph-data/file_reader.h"
#include "graph-data/time_format.h"
#include "insight/explain.h"
#include "insight/queries.h"
#include "insight/update_paths.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"
#include "policy/default_chain.h"
#include "policy/phased_rollout.h"
#include "test_util.h"

namespace cincinnati {
namespace {

using insight::Explanation;
using insight::ExplainRequest;
using insight::Verdict;
using testing::TempDir;
using testing::WriteFile;

// The policy engine's default chain (cli/service_commands.cc) at a fixed instant.
TransformChain DefaultChain(int64_t now, std::set<std::string> targets = {}) {
  return policy::DefaultChain(std::move(targets), env::ManualClock::AtUnixSeconds(now));
}

Graph Build(const std::filesystem::path& dir) {
  auto g = testing::BuildLocal(dir / "releases", dir / "graph-data");
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? std::move(g).value() : Graph();
}

Graph ServedView(const TransformChain& chain, const Graph& graph, const Parameters& params,
                 const ClusterEntitlements& entitlements = {}) {
  TransformContext context;
  context.parameters = params;
  context.entitlements = entitlements;
  auto view = RunChainOn(chain, graph, context);
  EXPECT_TRUE(view.ok()) << view.status().message();
  return view.ok() ? std::move(view).value() : Graph();
}

std::set<std::string> Channels(const Graph& graph) {
  std::set<std::string> out;
  for (const Node& n : graph.nodes()) {
    auto it = n.metadata.find(PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix));
    if (it == n.metadata.end()) continue;
    for (std::string_view c : Split(it->second, ',')) out.emplace(c);
  }
  return out;
}

std::vector<std::string> ConditionalRisks(const Graph& view, const std::string& from, const std::string& to) {
  std::vector<std::string> out;
  for (const ConditionalEdge& group : view.conditional_edges()) {
    for (const ConditionalEdgeRef& ref : group.edges) {
      if (ref.from == from && ref.to == to) {
        for (const Risk& r : group.risks) out.push_back(r.name);
      }
    }
  }
  return out;
}

Explanation ExplainOne(const TransformChain& chain, const Graph& graph, Parameters params, const std::string& from,
                       const std::optional<std::string>& to, const ClusterEntitlements& entitlements = {}) {
  ExplainRequest request{std::move(params), entitlements, from, to};
  auto e = insight::Explain(chain, graph, request);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? std::move(e).value() : Explanation();
}

const insight::Reason* FindReason(const insight::EdgeExplanation& edge, std::string_view kind) {
  for (const insight::Reason& r : edge.reasons) {
    if (r.kind == kind) return &r;
  }
  return nullptr;
}

std::string Reasons(const insight::EdgeExplanation& edge) {
  std::string out;
  for (const insight::Reason& r : edge.reasons) out += r.kind + ": " + r.message + "\n";
  return out;
}

// For every channel, arch and pair of releases: explain says offered exactly when the
// served view has the edge, conditional exactly when it has it with risks.
void ExpectExplanationsAgreeWithViews(const std::filesystem::path& example, const std::vector<std::string>& archs,
                                      const std::vector<std::pair<std::string, ClusterEntitlements>>& clusters,
                                      const std::string& at = "2026-01-01T00:00:00Z") {
  const int64_t now = *graphdata::ParseDateTime(at);
  TransformChain chain = DefaultChain(now);
  Graph graph = Build(example);
  size_t offered = 0, conditional = 0, not_offered = 0;
  for (const std::string& channel : Channels(graph)) {
    for (const std::string& arch : archs) {
      for (const auto& [id, entitlements] : clusters) {
        Parameters params{{"channel", channel}, {"arch", arch}};
        if (!id.empty()) params["id"] = id;
        // Every release of the graph, by the version a view gives it.
        std::set<std::string> releases;
        const Graph channel_view = ServedView(chain, graph, {{"arch", arch}, {"channel", channel}});
        for (const Node& n : channel_view.nodes()) releases.insert(n.version);
        for (const Node& n : graph.nodes()) releases.insert(insight::ViewVersion(n.version, arch));
        for (const std::string& from : releases) {
          Parameters with_version = params;
          with_version["version"] = from;
          Graph view = ServedView(chain, graph, with_version, entitlements);
          Explanation all = ExplainOne(chain, graph, params, from, std::nullopt, entitlements);
          std::set<std::string> explained;
          for (const auto& e : all.edges) explained.insert(e.to);
          for (const std::string& to : releases) {
            if (to == from) continue;
            auto a = view.Find(from), b = view.Find(to);
            const bool edge = a && b && view.HasEdge(*a, *b);
            const std::vector<std::string> risks = ConditionalRisks(view, from, to);
            Explanation e = ExplainOne(chain, graph, params, from, to, entitlements);
            if (!e.stop.empty()) {  // a release this cluster may not know of (another's hotfix): as none
              EXPECT_FALSE(a.has_value()) << from;
              EXPECT_EQ(e.message.find("hotfix", from.size()), std::string::npos) << e.message;
              continue;
            }
            ASSERT_EQ(e.edges.size(), 1u);
            const auto& x = e.edges[0];
            SCOPED_TRACE(channel + " " + arch + " id=" + id + " " + from + " -> " + to + "\n" + Reasons(x));
            EXPECT_EQ(x.verdict == Verdict::kOffered, edge);
            EXPECT_EQ(x.verdict == Verdict::kConditional, !edge && !risks.empty());
            if (x.verdict == Verdict::kConditional) {
              EXPECT_EQ(x.reasons.at(0).risks, risks);
            }
            ASSERT_FALSE(x.reasons.empty());
            for (const auto& r : x.reasons) EXPECT_FALSE(r.message.empty());
            if (edge) {
              ++offered;
              EXPECT_TRUE(explained.count(to)) << "an offered target is a candidate";
            } else if (!risks.empty()) {
              ++conditional;
            } else {
              ++not_offered;
              EXPECT_EQ(FindReason(x, "offered"), nullptr);
            }
          }
        }
      }
    }
  }
  EXPECT_GT(offered, 0u);
  EXPECT_GT(not_offered, 0u);
  ::testing::Test::RecordProperty("offered", static_cast<int>(offered));
  ::testing::Test::RecordProperty("conditional", static_cast<int>(conditional));
}

TEST(ExplainTest, AgreesWithTheServedViewOnEveryPairOfTheSeedExample) {
  ExpectExplanationsAgreeWithViews(testing::Examples() / "seed", {"amd64"}, {{"", {}}});
}

TEST(ExplainTest, AgreesWithTheServedViewOnEveryPairOfThe4xExample) {
  ClusterEntitlements acme;
  acme.hotfixes = {"acme-etcd-defrag"};
  ExpectExplanationsAgreeWithViews(testing::Examples() / "ocp-4x", {"amd64", "arm64"},
                                   {{"", {}}, {"0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60", acme}});
}

TEST(ExplainTest, AgreesWithTheServedViewOnThePhasedExample) {
  ExpectExplanationsAgreeWithViews(testing::Examples() / "phased", {"amd64"},
                                   {{"", {}}, {"0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60", {}}}, "2020-05-13T00:00:00Z");
}

// A tree with one release for each cause an explanation names.
class ExplainCausesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto release = [&](const std::string& v, const std::string& previous) {
      WriteFile(dir_ / "releases" / (v + ".json"),
                R"({"kind":"cincinnati-metadata-v0","version":")" + v + R"(","previous":[)" + previous +
                    R"(],"metadata":{"url":"https://example.com/)" + v + R"("},"payload":"quay.io/x/y@sha256:)" +
                    std::string(64, 'a') + "\"}");
    };
    release("1.0.0", "");
    release("1.0.1", R"("1.0.0")");
    release("1.1.0", R"("1.0.0","1.0.1")");
    release("1.1.1", R"("1.0.0","1.0.1","1.1.0")");
    release("1.2.0", R"("1.1.0")");
    release("1.3.0", R"("1.1.1","1.2.0")");
    WriteFile(dir_ / "graph-data/version", "1.0.0\n");
    WriteFile(dir_ / "graph-data/raw/metadata.json", "{}");
    WriteFile(dir_ / "graph-data/channels/stable-1.yaml",
              "name: stable-1\nversions: [1.0.0, 1.0.1, 1.1.0, 1.1.1, 1.3.0]\n");
    WriteFile(dir_ / "graph-data/channels/fast-1.yaml",
              "name: fast-1\nversions: [1.0.0, 1.0.1, 1.1.0, 1.1.1, 1.2.0, 1.3.0]\n");
    WriteFile(dir_ / "graph-data/blocked-edges/1.1.0-old.yaml", "to: 1.1.0\nfrom: 1[.]0[.]0\n");
    WriteFile(dir_ / "graph-data/blocked-edges/1.1.1-risk.yaml",
              "to: 1.1.1\nfrom: 1[.]0[.].*\nurl: https://example.com/risk\nname: SlowDisks\n"
              "message: Disks may be slow.\nmatchingRules:\n- type: Always\n");
    graph_ = Build(dir_.path());
  }
  TempDir dir_;
  Graph graph_;
  TransformChain chain_ = DefaultChain(0);
};

TEST_F(ExplainCausesTest, EachCauseIsNamed) {
  Parameters stable{{"channel", "stable-1"}};
  // Blocked by the file that blocks it, with its rule.
  auto blocked = ExplainOne(chain_, graph_, stable, "1.0.0", "1.1.0").edges.at(0);
  ASSERT_NE(FindReason(blocked, "blocked"), nullptr) << Reasons(blocked);
  EXPECT_EQ(FindReason(blocked, "blocked")->file, "blocked-edges/1.1.0-old.yaml");
  EXPECT_EQ(FindReason(blocked, "blocked")->rule, "1[.]0[.]0");
  // 1.0.1 -> 1.1.0 is not blocked (the rule names 1.0.0 only).
  EXPECT_EQ(ExplainOne(chain_, graph_, stable, "1.0.1", "1.1.0").edges.at(0).verdict, Verdict::kOffered);
  // A risk: conditional, naming the risk and its file.
  auto risky = ExplainOne(chain_, graph_, stable, "1.0.1", "1.1.1").edges.at(0);
  EXPECT_EQ(risky.verdict, Verdict::kConditional) << Reasons(risky);
  EXPECT_EQ(risky.reasons.at(0).risks, std::vector<std::string>{"SlowDisks"});
  EXPECT_NE(risky.reasons.at(0).message.find("blocked-edges/1.1.1-risk.yaml"), std::string::npos);
  // Not in the channel: 1.2.0 is in fast-1 only.
  auto channel = ExplainOne(chain_, graph_, stable, "1.1.0", "1.2.0").edges.at(0);
  ASSERT_NE(FindReason(channel, "not_in_channel"), nullptr) << Reasons(channel);
  EXPECT_EQ(FindReason(channel, "not_in_channel")->step, "channel-filter");
  EXPECT_EQ(ExplainOne(chain_, graph_, {{"channel", "fast-1"}}, "1.1.0", "1.2.0").edges.at(0).verdict,
            Verdict::kOffered);
  // Never declared by the releases.
  auto none = ExplainOne(chain_, graph_, stable, "1.0.0", "1.3.0").edges.at(0);
  EXPECT_NE(FindReason(none, "no_update"), nullptr) << Reasons(none);
  // Not a release at all, and not for this arch.
  EXPECT_NE(FindReason(ExplainOne(chain_, graph_, stable, "1.0.0", "9.9.9").edges.at(0), "not_in_graph"), nullptr);
  // Without `to`: the newer releases of the channel, each explained.
  auto all = ExplainOne(chain_, graph_, stable, "1.0.0", std::nullopt);
  std::vector<std::string> targets;
  for (const auto& e : all.edges) targets.push_back(e.to);
  EXPECT_EQ(targets, (std::vector<std::string>{"1.0.1", "1.1.0", "1.1.1", "1.3.0"}));
  // The JSON and text forms carry the verdicts and the file.
  std::string json = insight::ExplanationJson(all);
  EXPECT_NE(json.find(R"("to":"1.1.0","verdict":"not_offered","offered":false)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("file":"blocked-edges/1.1.0-old.yaml")"), std::string::npos) << json;
  EXPECT_NE(insight::ExplanationText(all).find("blocked by blocked-edges/1.1.0-old.yaml"), std::string::npos);
}

TEST_F(ExplainCausesTest, ARemovedReleaseAndARemovedEdgeAreNamed) {
  // release.remove (node-remove) on 1.1.0, from its metadata.
  Graph graph = graph_;
  graph.mutable_metadata(*graph.Find("1.1.0+amd64"))[PrefixedKey(kDefaultKeyPrefix, kReleaseRemoveSuffix)] = "true";
  TransformContext context;
  auto removed = NodeRemove().Apply(graph, context);
  ASSERT_TRUE(removed.ok());
  auto e = ExplainOne(chain_, *removed, {{"channel", "stable-1"}}, "1.0.1", "1.1.0").edges.at(0);
  EXPECT_NE(FindReason(e, "removed_release"), nullptr) << Reasons(e);
  // previous.remove in a release's metadata (raw/metadata.json here).
  WriteFile(dir_ / "graph-data/raw/metadata.json",
            R"({"1.3.0": {"io.openshift.upgrades.graph.previous.remove": "1.1.1"}})");
  Graph rebuilt = Build(dir_.path());
  auto metadata = ExplainOne(chain_, rebuilt, {{"channel", "stable-1"}}, "1.1.1", "1.3.0").edges.at(0);
  ASSERT_NE(FindReason(metadata, "removed_by_metadata"), nullptr) << Reasons(metadata);
  EXPECT_NE(FindReason(metadata, "removed_by_metadata")->message.find("previous.remove of 1.3.0"), std::string::npos);
}

TEST_F(ExplainCausesTest, AChannelTargetCutsOffReleasesOffItsPaths) {
  // Target 1.1.1 for stable-1: from 1.0.0, 1.3.0 is beyond it.
  WriteFile(dir_ / "graph-data/channels/stable-1.yaml",
            "name: stable-1\ntarget: 1.1.1\nversions: [1.0.0, 1.0.1, 1.1.0, 1.1.1, 1.3.0]\n");
  Graph graph = Build(dir_.path());
  TransformChain chain = DefaultChain(0, {"stable-1"});
  auto e = ExplainOne(chain, graph, {{"channel", "stable-1"}}, "1.1.1", "1.3.0").edges.at(0);
  ASSERT_NE(FindReason(e, "channel_target"), nullptr) << Reasons(e);
  EXPECT_EQ(FindReason(e, "channel_target")->step, "channel-target");
  // Without the target rule the same edge is offered.
  EXPECT_EQ(ExplainOne(chain_, graph, {{"channel", "stable-1"}}, "1.1.1", "1.3.0").edges.at(0).verdict,
            Verdict::kOffered);
}

// A channel filter under another name, as a deployment could register it.
class RenamedChannelFilter : public policy::ChannelFilter {
 public:
  using ChannelFilter::ChannelFilter;
  std::string_view name() const override { return "stable-channels"; }
};

// A step of someone's own that drops 1.1.1 and says nothing about why.
class DropRelease : public GraphTransform {
 public:
  explicit DropRelease(std::string version) : version_(std::move(version)) {}
  std::string_view name() const override { return "drop-release"; }
  Result<Graph> Apply(Graph graph, TransformContext&) const override {
    return graph.Retain([&](NodeIndex i) { return graph.node(i).version != version_; });
  }

 private:
  std::string version_;
};

// The same step, explaining itself.
class DropReleaseExplained : public DropRelease {
 public:
  using DropRelease::DropRelease;
  StepReason ExplainLoss(const StepLoss& loss) const override {
    return {"withdrawn", loss.from_version + " was withdrawn by the site"};
  }
};

TEST_F(ExplainCausesTest, EachStepExplainsItselfWhateverItsName) {
  Parameters stable{{"channel", "stable-1"}};
  TransformChain chain;
  chain.push_back(std::make_unique<RenamedChannelFilter>());
  chain.push_back(std::make_unique<policy::ArchFilter>());
  auto channel = ExplainOne(chain, graph_, stable, "1.1.0", "1.2.0").edges.at(0);
  const insight::Reason* r = FindReason(channel, "not_in_channel");
  ASSERT_NE(r, nullptr) << Reasons(channel);
  EXPECT_EQ(r->step, "stable-channels");
  EXPECT_EQ(r->message, "1.2.0 is not in channel stable-1 (it is in fast-1)");

  // A step that does not explain itself is named; one that does is quoted.
  chain.push_back(std::make_unique<DropRelease>("1.1.1"));
  auto dropped = ExplainOne(chain, graph_, stable, "1.1.0", "1.1.1").edges.at(0);
  r = FindReason(dropped, "removed_by_step");
  ASSERT_NE(r, nullptr) << Reasons(dropped);
  EXPECT_EQ(r->step, "drop-release");
  EXPECT_EQ(r->message, "1.1.1 is removed by the policy step drop-release");
  chain.back() = std::make_unique<DropReleaseExplained>("1.1.1");
  dropped = ExplainOne(chain, graph_, stable, "1.1.0", "1.1.1").edges.at(0);
  r = FindReason(dropped, "withdrawn");
  ASSERT_NE(r, nullptr) << Reasons(dropped);
  EXPECT_EQ(r->message, "1.1.1 was withdrawn by the site");
}

TEST_F(ExplainCausesTest, AStepWithAnotherKeyPrefixReadsItsOwnKeys) {
  // The channels under example.com's prefix, read by a channel filter configured for it.
  Graph graph = graph_;
  const std::string ours = PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix);
  const std::string theirs = PrefixedKey("com.example.upgrades", kChannelsSuffix);
  for (NodeIndex i = 0; i < graph.node_count(); ++i) {
    Metadata& m = graph.mutable_metadata(i);
    auto it = m.find(ours);
    if (it == m.end()) continue;
    m[theirs] = it->second;
    m.erase(ours);
  }
  TransformChain chain;
  chain.push_back(std::make_unique<policy::ChannelFilter>("com.example.upgrades"));
  chain.push_back(std::make_unique<policy::ArchFilter>());
  auto e = ExplainOne(chain, graph, {{"channel", "stable-1"}}, "1.1.0", "1.2.0").edges.at(0);
  const insight::Reason* r = FindReason(e, "not_in_channel");
  ASSERT_NE(r, nullptr) << Reasons(e);
  EXPECT_EQ(r->message, "1.2.0 is not in channel stable-1 (it is in fast-1)");
}

TEST(ExplainPhasedTest, APhasedEdgeSaysWhenThisClusterSeesIt) {
  Graph graph = Build(testing::Examples() / "phased");
  // One day into 4.4.3's two-day patch window in stable-4.4.
  const int64_t now = *graphdata::ParseDateTime("2020-05-13T00:00:00Z");
  TransformChain chain = DefaultChain(now);
  const std::string id = "0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60";
  Parameters params{{"channel", "stable-4.4"}, {"id", id}};
  auto e = ExplainOne(chain, graph, params, "4.4.2", "4.4.3").edges.at(0);
  const double u = policy::RolloutPosition(id, "4.4.3");
  const int64_t begin = *graphdata::ParseDateTime("2020-05-12T00:00:00Z");
  if (u < 0.5) {
    EXPECT_EQ(e.verdict, Verdict::kOffered) << Reasons(e);
  } else {
    const insight::Reason* r = FindReason(e, "phased");
    ASSERT_NE(r, nullptr) << Reasons(e);
    EXPECT_EQ(*r->visible_from, begin + static_cast<int64_t>(std::ceil(u * 2 * 86400)));
    EXPECT_NEAR(*r->share_now, 0.5, 1e-9);
    EXPECT_EQ(*r->complete_at, begin + 2 * 86400);
  }
  // Without an id a cluster waits for the end of the window.
  auto anonymous = ExplainOne(chain, graph, {{"channel", "stable-4.4"}}, "4.4.2", "4.4.3").edges.at(0);
  const insight::Reason* r = FindReason(anonymous, "phased");
  ASSERT_NE(r, nullptr) << Reasons(anonymous);
  EXPECT_EQ(*r->visible_from, begin + 2 * 86400);
  // Before 4.4.3's start it is not in the channel yet.
  TransformChain early = DefaultChain(begin - 3600);
  auto before = ExplainOne(early, graph, params, "4.4.2", "4.4.3").edges.at(0);
  ASSERT_NE(FindReason(before, "not_started"), nullptr) << Reasons(before);
  EXPECT_EQ(*FindReason(before, "not_started")->visible_from, begin);
}

// To anyone not entitled to it, a hotfix is no release at all: explained as one that does
// not exist, never listed, never named with its rules (whose names are often their
// customers'), as a path says it.
TEST(ExplainHotfixTest, AHotfixIsForItsCustomersOnly) {
  Graph graph = Build(testing::Examples() / "ocp-4x");
  TransformChain chain = DefaultChain(0);
  Parameters params{{"channel", "stable-4.13"}};
  auto other = ExplainOne(chain, graph, params, "4.12.3", "4.13.1-hotfix.1").edges.at(0);
  EXPECT_EQ(other.verdict, Verdict::kNotOffered);
  ASSERT_NE(FindReason(other, "not_in_graph"), nullptr) << Reasons(other);
  EXPECT_EQ(FindReason(other, "hotfix"), nullptr) << Reasons(other);
  EXPECT_EQ(Reasons(other).find("acme"), std::string::npos) << Reasons(other);
  // The same words as for a release that does not exist.
  auto none = ExplainOne(chain, graph, params, "4.12.3", "4.13.9").edges.at(0);
  ASSERT_EQ(other.reasons.size(), 1u);
  ASSERT_EQ(none.reasons.size(), 1u);
  EXPECT_EQ(other.reasons[0].kind, none.reasons[0].kind);
  EXPECT_EQ(other.reasons[0].message.substr(other.to.size()), none.reasons[0].message.substr(none.to.size()));
  // Not among the candidates of an explanation without a target, nor in the list of
  // releases a mistyped or hidden version is answered with.
  for (const auto& edge : ExplainOne(chain, graph, params, "4.12.3", std::nullopt).edges) EXPECT_EQ(edge.to.find("hotfix"), std::string::npos);
  for (const std::string version : {"9.9.9", "4.13.1-hotfix.1"}) {
    auto stop = insight::Explain(chain, graph, insight::ExplainRequest{params, {}, version, std::nullopt});
    ASSERT_TRUE(stop.ok()) << stop.status().ToString();
    EXPECT_EQ(stop->stop, "not_in_channel") << version;
    EXPECT_NE(stop->message.find("is not a release of channel stable-4.13"), std::string::npos) << stop->message;
    EXPECT_EQ(stop->message.find("hotfix", version.size()), std::string::npos) << stop->message;  // past the version asked
  }
  ClusterEntitlements acme;
  acme.hotfixes = {"acme-etcd-defrag"};
  params["id"] = "0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60";
  EXPECT_EQ(ExplainOne(chain, graph, params, "4.12.3", "4.13.1-hotfix.1", acme).edges.at(0).verdict,
            Verdict::kOffered);
}

TEST(ExplainErrorsTest, BadQueriesAreTheReferenceErrorKinds) {
  EXPECT_EQ(insight::ParseExplainQuery({{"version", "4.1.0"}}).status().code(), Status::Code::kMissingParams);
  EXPECT_EQ(insight::ParseExplainQuery({{"channel", "stable-4.1"}}).status().code(), Status::Code::kMissingParams);
  EXPECT_EQ(insight::ParseExplainQuery({{"channel", "Bad!"}, {"version", "4.1.0"}}).status().code(),
            Status::Code::kInvalidParams);
  EXPECT_EQ(insight::ParseExplainQuery({{"channel", "a-1"}, {"version", "x"}}).status().code(),
            Status::Code::kInvalidParams);
  EXPECT_EQ(insight::ParsePathQuery({{"channel", "a-1"}, {"from", "1.0.0"}, {"to", "2.0.0"}, {"k", "0"}}).status().code(),
            Status::Code::kInvalidParams);
  EXPECT_EQ(insight::ParsePathQuery({{"channel", "a-1"}, {"from", "1.0.0"}}).status().code(),
            Status::Code::kMissingParams);
}

}  // namespace
}  // namespace cincinnati
