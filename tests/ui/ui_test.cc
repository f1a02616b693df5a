// Pictures of served views (src/ui): `cincinnati graph render` against the policy chain's
// own view of the seed example, the DOT marks a page relies on, and the page's data
// routes (`/`, `/v1/ui/channels`, `/v1/ui/graph.svg`, `/v1/ui/rollouts`) over real HTTP.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <regex>
#include <set>

#include <fmt/format.h>

#include "core/graph_json.h"
#include "policy/default_chain.h"
#include "service_util.h"
#include "test_util.h"
#include "ui/graph_render.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using testing::Get;
using testing::RunCincinnati;
using testing::ServiceProcess;
using testing::WaitFor;

struct Drawn {
  std::set<std::string> releases, edges;
};

// The ids a picture gives its releases and edges ("release:V", "edge:A:B").
Drawn IdsIn(const std::string& text) {
  Drawn out;
  static const std::regex id(R"re(id="(release|edge):([^":]+)(?::([^"]+))?")re");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), id); it != std::sregex_iterator(); ++it) {
    if ((*it)[1] == "release") out.releases.insert((*it)[2]);
    else out.edges.insert((*it)[2].str() + "->" + (*it)[3].str());
  }
  return out;
}

// What the policy engine serves a client of `channel` (default chain, no id).
Drawn ServedView(const fs::path& example, const std::string& channel) {
  auto graph = testing::BuildLocal(example / "releases", example / "graph-data");
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  const TransformChain chain = policy::DefaultChain({}, env::SharedRealClock());
  TransformContext context;
  context.parameters = {{"channel", channel}, {"arch", "amd64"}};
  auto view = RunChainOn(chain, *graph, context);
  EXPECT_TRUE(view.ok()) << view.status().message();
  Drawn out;
  for (const Node& n : view->nodes()) out.releases.insert(n.version);
  for (const Edge& e : view->Edges()) out.edges.insert(view->node(e.from).version + "->" + view->node(e.to).version);
  return out;
}

std::string RenderSeed(const std::string& channel, const std::string& format, const std::string& extra = "") {
  const fs::path seed = testing::Examples() / "seed";
  auto r = RunCincinnati("graph render --releases " + (seed / "releases").string() + " --graph-data " +
                         (seed / "graph-data").string() + " --channel " + channel + " --format " + format + extra);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(GraphRenderTest, TheSeedBetaViewHasExactlyTheServedNodesAndEdges) {
  const Drawn served = ServedView(testing::Examples() / "seed", "beta");
  EXPECT_EQ(served.releases, (std::set<std::string>{"1.0.0", "1.1.1", "1.3.0"}));
  EXPECT_EQ(served.edges, (std::set<std::string>{"1.0.0->1.1.1", "1.0.0->1.3.0", "1.1.1->1.3.0"}));
  for (const std::string format : {"dot", "svg"}) {
    const std::string text = RenderSeed("beta", format);
    const Drawn drawn = IdsIn(text);
    EXPECT_EQ(drawn.releases, served.releases) << format << "\n" << text;
    EXPECT_EQ(drawn.edges, served.edges) << format << "\n" << text;
  }
  EXPECT_NE(RenderSeed("beta", "svg").find("<svg"), std::string::npos);
}

TEST(GraphRenderTest, TheAlphaViewDrawsBlockedEdgesOnlyWhenAsked) {
  const Drawn served = ServedView(testing::Examples() / "seed", "alpha");
  EXPECT_EQ(served.releases.size(), 5u);
  const std::string plain = RenderSeed("alpha", "dot");
  EXPECT_EQ(IdsIn(plain).edges, served.edges);
  EXPECT_EQ(plain.find("blocked:"), std::string::npos);
  // 1.1.0 is degraded: every edge into it is blocked by blocked-edges/1.1.0.yaml.
  const std::string blocked = RenderSeed("alpha", "dot", " --blocked");
  EXPECT_NE(blocked.find(R"(id="blocked:1.0.0:1.1.0")"), std::string::npos) << blocked;
  EXPECT_NE(blocked.find("blocked-edges/1.1.0.yaml"), std::string::npos) << blocked;
  EXPECT_EQ(IdsIn(blocked).edges, served.edges);  // blocked edges are not drawn as edges of the view
}

TEST(GraphRenderTest, PngGoesToAFileAndAPathIsBold) {
  testing::TempDir dir;
  const fs::path png = dir / "beta.png";
  RenderSeed("beta", "png", " -o " + png.string());
  EXPECT_EQ(testing::ReadFile(png).rfind("\x89PNG\r\n", 0), 0u);
  const std::string dot = RenderSeed("beta", "dot", " --from 1.0.0 --to 1.3.0");
  EXPECT_NE(dot.find(R"("1.0.0" -> "1.3.0" [id="edge:1.0.0:1.3.0", class="recommended on-path")"), std::string::npos) << dot;
  EXPECT_EQ(dot.find(R"(id="edge:1.0.0:1.1.1", class="recommended on-path")"), std::string::npos) << dot;
  auto bad = RunCincinnati("graph render --releases " + (testing::Examples() / "seed" / "releases").string() +
                           " --graph-data " + (testing::Examples() / "seed" / "graph-data").string() +
                           " --channel beta --format gif");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--format"), std::string::npos) << bad.err;
}

TEST(GraphRenderTest, AChannelWithoutReleasesIsAnErrorAndTheFileNameGivesTheFormat) {
  const fs::path seed = testing::Examples() / "seed";
  const std::string sources = " --releases " + (seed / "releases").string() + " --graph-data " + (seed / "graph-data").string();
  auto typo = RunCincinnati("graph render" + sources + " --channel bta");
  EXPECT_EQ(typo.exit_code, 1);
  EXPECT_EQ(typo.err, "error: unknown channel 'bta'; did you mean 'beta'? (channels: alpha, beta)\n");
  EXPECT_EQ(typo.out, "");
  testing::TempDir dir;
  auto png = RunCincinnati("graph render" + sources + " --channel beta -o " + (dir / "beta.png").string());
  EXPECT_EQ(png.exit_code, 0) << png.err;
  EXPECT_EQ(testing::ReadFile(dir / "beta.png").rfind("\x89PNG\r\n", 0), 0u);
  auto dot = RunCincinnati("graph render" + sources + " --channel beta -o " + (dir / "beta.dot").string());
  EXPECT_EQ(testing::ReadFile(dir / "beta.dot").rfind("digraph", 0), 0u);
  auto other = RunCincinnati("graph render" + sources + " --channel beta -o " + (dir / "beta.jpg").string());
  EXPECT_EQ(other.exit_code, 2) << "a name of no known format is a bad value: a usage error";
  EXPECT_NE(other.err.find("beta.jpg: cannot draw that format; name the file .svg, .png or .dot, or give --format"),
            std::string::npos)
      << other.err;
  EXPECT_FALSE(fs::exists(dir / "beta.jpg")) << "no SVG under a JPEG's name";
  auto bare = RunCincinnati("graph render" + sources + " --channel beta -o " + (dir / "beta").string());
  EXPECT_NE(testing::ReadFile(dir / "beta").find("<svg"), std::string::npos) << "no extension: SVG";
  auto lone_to = RunCincinnati("graph render" + sources + " --channel beta --to 1.3.0");
  EXPECT_EQ(lone_to.exit_code, 2) << "--to without --from was silently ignored";
  EXPECT_NE(lone_to.err.find("--from"), std::string::npos) << lone_to.err;
  auto asked = RunCincinnati("graph render" + sources + " --channel beta --format dot -o " + (dir / "x.png").string());
  EXPECT_EQ(testing::ReadFile(dir / "x.png").rfind("digraph", 0), 0u) << "--format wins over the name";
}

// A picture is made to be used elsewhere (a web root, a document): the umask decides
// its mode, as for `cp`, not a fixed 0600.
TEST(GraphRenderTest, ThePictureHasTheModeTheUmaskGives) {
  const fs::path seed = testing::Examples() / "seed";
  const std::string sources = " --releases " + (seed / "releases").string() + " --graph-data " + (seed / "graph-data").string();
  testing::TempDir dir;
  for (mode_t mask : {mode_t{022}, mode_t{027}}) {
    const mode_t before = ::umask(mask);
    const fs::path out = dir / fmt::format("beta-{:o}.svg", mask);
    auto r = RunCincinnati("graph render" + sources + " --channel beta -o " + out.string());
    ::umask(before);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    struct stat st {};
    ASSERT_EQ(::stat(out.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask) << out;
  }
}

TEST(GraphRenderTest, ConditionalEdgesAreDashedWithTheirRisks) {
  Graph g;
  auto a = g.AddNode(Node::Concrete("4.12.3", "quay.io/a@sha256:1"));
  auto b = g.AddNode(Node::Concrete("4.13.2", "quay.io/a@sha256:2"));
  ASSERT_TRUE(a.ok() && b.ok());
  ConditionalEdge group;
  group.edges.push_back({"4.12.3", "4.13.2"});
  group.risks.push_back(Risk{"https://example.com/risk", "IngressRisk", "a <message>", {}});
  g.mutable_conditional_edges().push_back(group);
  const std::string dot = ui::ViewDot(g, {});
  EXPECT_NE(dot.find(R"(id="edge:4.12.3:4.13.2", class="conditional")"), std::string::npos) << dot;
  EXPECT_NE(dot.find("IngressRisk"), std::string::npos) << dot;
  auto svg = ui::RenderDot(dot, "svg");
  ASSERT_TRUE(svg.ok()) << svg.status().message();
  EXPECT_NE(svg->find(R"(id="edge:4.12.3:4.13.2")"), std::string::npos);
  auto broken = ui::RenderDot("digraph {\n a -> ", "svg");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("syntax error in line"), std::string::npos) << broken.status().message();
  EXPECT_FALSE(ui::RenderDot(dot, "gif").ok());
}

// A brake's risk (named AutomaticallyBlocked_...) marks its edge as a brake: its own
// class, solid and crimson, labelled "brake:"; another risk on another edge does not.
TEST(GraphRenderTest, ABrakedEdgeIsDrawnAsABrake) {
  Graph g;
  for (const char* v : {"4.13.1", "4.13.2", "4.13.3"}) ASSERT_TRUE(g.AddNode(Node::Concrete(v, std::string("quay.io/a@sha256:") + v)).ok());
  ConditionalEdge braked;
  braked.edges.push_back({"4.13.1", "4.13.2"});
  braked.risks.push_back(Risk{"https://updates.example.com/brakes", "AutomaticallyBlocked_4_13_1_to_4_13_2", "failures", {}});
  ConditionalEdge other;
  other.edges.push_back({"4.13.1", "4.13.3"});
  other.risks.push_back(Risk{"https://example.com/risk", "IngressRisk", "a risk", {}});
  g.mutable_conditional_edges().push_back(braked);
  g.mutable_conditional_edges().push_back(other);
  const std::string dot = ui::ViewDot(g, {});
  EXPECT_NE(dot.find(R"(id="edge:4.13.1:4.13.2", class="conditional brake", style=solid, color="#c2255c")"), std::string::npos) << dot;
  EXPECT_NE(dot.find(R"(label="brake: AutomaticallyBlocked_4_13_1_to_4_13_2")"), std::string::npos) << dot;
  EXPECT_NE(dot.find(R"(id="edge:4.13.1:4.13.3", class="conditional", style=dashed)"), std::string::npos) << dot;
}

// Releases 4.1.0..4.<minors>.<patches-1>, each reachable from the `reach` releases before it.
Graph DenseGraph(int minors, int patches, int reach) {
  Graph g;
  std::vector<NodeIndex> order;
  for (int m = 1; m <= minors; ++m) {
    for (int p = 0; p < patches; ++p) {
      order.push_back(*g.AddNode(Node::Concrete(fmt::format("4.{}.{}", m, p), fmt::format("quay.io/r@sha256:{}", m * 1000 + p))));
    }
  }
  std::vector<Edge> edges;
  for (size_t i = 0; i < order.size(); ++i) {
    for (size_t j = i > static_cast<size_t>(reach) ? i - reach : 0; j < i; ++j) edges.push_back(Edge{order[j], order[i]});
  }
  EXPECT_TRUE(g.AddEdges(edges).ok());
  return g;
}

TEST(GraphRenderTest, ABigViewIsPinnedToAVersionGridWithEveryEdge) {
  const Graph small = DenseGraph(1, 10, 3);
  EXPECT_EQ(ui::ViewDot(small).find("layout=nop2"), std::string::npos);  // dot lays small views out

  const Graph big = DenseGraph(3, 40, 12);  // 120 releases, 1,362 edges: dot would take minutes
  ui::DotOptions options;
  options.title = "big";
  options.path = {"4.1.0", "4.1.12"};
  const std::string dot = ui::ViewDot(big, options);
  EXPECT_NE(dot.find("layout=nop2"), std::string::npos);
  EXPECT_EQ(testing::Count(dot, "pos=\""), big.node_count() + big.edge_count());
  // Rows per minor: 4.2.0 starts the second row of 25 (4.1.25..39 wrap to a row of their own).
  EXPECT_NE(dot.find(R"("4.1.24" [id="release:4.1.24", class="release", pos="2160,0!"])"), std::string::npos);
  EXPECT_NE(dot.find(R"("4.1.25" [id="release:4.1.25", class="release", pos="0,-260!"])"), std::string::npos);
  EXPECT_NE(dot.find(R"("4.2.0" [id="release:4.2.0", class="release", pos="0,-520!"])"), std::string::npos);
  auto svg = ui::RenderDot(dot, "svg");
  ASSERT_TRUE(svg.ok()) << svg.status().message();
  const Drawn drawn = IdsIn(*svg);
  EXPECT_EQ(drawn.releases.size(), big.node_count());
  EXPECT_EQ(drawn.edges.size(), big.edge_count());
  EXPECT_NE(svg->find(R"(id="edge:4.1.0:4.1.12" class="edge recommended on&#45;path")"), std::string::npos);
}

// `serve` on the 4.x example with the page on (its default).
class UiRoutesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const fs::path example = testing::Examples() / "ocp-4x";
    serve_ = new ServiceProcess("serve", {"--releases", (example / "releases").string(), "--graph-data",
                                          (example / "graph-data").string(), "--service.pause_secs", "1"});
    ASSERT_TRUE(WaitFor([] { return Get(serve_->url("/readyz", "status")).status == 200; })) << serve_->log();
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(serve_->Stop(), 0) << serve_->log();
    delete serve_;
  }
  static std::string Url(const std::string& path) { return serve_->url("/api/upgrades_info" + path); }
  static ServiceProcess* serve_;
};
ServiceProcess* UiRoutesTest::serve_ = nullptr;

TEST_F(UiRoutesTest, ThePageIsSelfContained) {
  auto page = Get(serve_->url("/"));
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.headers["Content-Type"], "text/html; charset=utf-8");
  for (const char* id : {"channel", "arch", "graph", "details", "from", "to", "path-button", "explain-button", "rollouts"}) {
    EXPECT_NE(page.body.find("id=\"" + std::string(id) + "\""), std::string::npos) << id;
  }
  EXPECT_NE(page.body.find(R"(const PREFIX = "/api/upgrades_info";)"), std::string::npos);
  // Nothing is loaded from elsewhere: no scheme-qualified src or href.
  EXPECT_EQ(page.body.find("src=\"http"), std::string::npos);
  EXPECT_EQ(page.body.find("href=\"http"), std::string::npos);
  // A browser gets the page at the prefix too; a Cincinnati client pointed there by
  // mistake (Accept: application/json, as the CVO sends) gets the reference's 404, which
  // an agent reports as "unexpected HTTP status", not a page it fails to read as JSON.
  const std::string browser = "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
  EXPECT_EQ(Get(Url(""), {browser}).status, 200);
  EXPECT_EQ(Get(Url("/"), {"Accept: */*"}).status, 200);
  for (const std::string path : {"", "/"}) {
    auto client = Get(Url(path), {"Accept: application/json"});
    EXPECT_EQ(client.status, 404) << path;
    EXPECT_EQ(client.body.find("<html"), std::string::npos) << path;
    EXPECT_EQ(Get(Url(path), {"Accept: application/vnd.redhat.cincinnati.v1+json"}).status, 404) << path;
  }
}

TEST_F(UiRoutesTest, ChannelsAndTheDrawnViewComeFromTheServedGraph) {
  auto channels = Get(Url("/v1/ui/channels"));
  ASSERT_EQ(channels.status, 200) << channels.body;
  EXPECT_NE(channels.body.find("\"stable-4.13\""), std::string::npos) << channels.body;
  EXPECT_NE(channels.body.find(R"("arches":["amd64","arm64"])"), std::string::npos) << channels.body;

  auto svg = Get(Url("/v1/ui/graph.svg?channel=stable-4.13"));
  ASSERT_EQ(svg.status, 200) << svg.body;
  EXPECT_EQ(svg.headers["Content-Type"], "image/svg+xml");
  auto served = Get(Url("/v1/graph?channel=stable-4.13"));
  auto graph = ReadGraphJson(served.body);
  ASSERT_TRUE(graph.ok()) << served.body;
  Drawn want;
  for (const Node& n : graph->nodes()) want.releases.insert(n.version);
  for (const Edge& e : graph->Edges()) want.edges.insert(graph->node(e.from).version + "->" + graph->node(e.to).version);
  for (const ConditionalEdge& c : graph->conditional_edges()) {
    for (const ConditionalEdgeRef& e : c.edges) want.edges.insert(e.from + "->" + e.to);
  }
  const Drawn drawn = IdsIn(svg.body);
  EXPECT_EQ(drawn.releases, want.releases);
  EXPECT_EQ(drawn.edges, want.edges);
  EXPECT_EQ(svg.body.find("blocked:"), std::string::npos);

  auto with_blocked = Get(Url("/v1/ui/graph.svg?channel=stable-4.13&blocked=1"));
  EXPECT_NE(with_blocked.body.find(R"(id="blocked:4.12.3:4.13.1")"), std::string::npos);
  EXPECT_EQ(Get(Url("/v1/ui/graph.svg?channel=stable-4.13")).body, svg.body);  // cached, same bytes

  EXPECT_EQ(Get(Url("/v1/ui/graph.svg?channel=stable%20413")).status, 400);
  EXPECT_EQ(Get(Url("/v1/ui/graph.svg")).status, 400);
  EXPECT_EQ(Get(Url("/v1/ui/unknown?channel=stable-4.13")).status, 404);
}

TEST(UiPhasedTest, RolloutsShowEachPhasedEdgesShareAndEnd) {
  const fs::path example = testing::Examples() / "phased";
  ServiceProcess serve("serve", {"--releases", (example / "releases").string(), "--graph-data",
                                 (example / "graph-data").string(), "--service.pause_secs", "1"});
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readyz", "status")).status == 200; })) << serve.log();
  auto r = Get(serve.url("/api/upgrades_info/v1/ui/rollouts?channel=stable-4.4"));
  ASSERT_EQ(r.status, 200) << r.body;
  // Started 2020-05-12: long complete, every cluster sees it.
  EXPECT_NE(r.body.find(R"("to":"4.4.3","share":1.0000,"begin":"2020-05-12T00:00:00Z")"), std::string::npos) << r.body;
  EXPECT_EQ(serve.Stop(), 0);
}

TEST(UiOptInTest, ThePolicyEngineDrawsOnlyWhenAsked) {
  const fs::path example = testing::Examples() / "seed";
  const std::string prefix = "/api/upgrades_info";
  ServiceProcess builder("graph-builder", {"--releases", (example / "releases").string(), "--graph-data",
                                           (example / "graph-data").string(), "--service.pause_secs", "1",
                                           "--service.path_prefix", prefix});
  const std::string upstream = builder.url(prefix + "/graph");
  ServiceProcess off("policy-engine", {"--upstream.cincinnati.url", upstream, "--service.path_prefix", prefix});
  ServiceProcess on("policy-engine",
                    {"--upstream.cincinnati.url", upstream, "--service.path_prefix", prefix, "--web.enabled", "true"});
  ASSERT_TRUE(WaitFor([&] { return Get(on.url(prefix + "/v1/ui/channels")).status == 200; })) << on.log();
  EXPECT_EQ(Get(off.url("/")).status, 404);
  EXPECT_EQ(Get(on.url("/")).status, 200);
  EXPECT_EQ(Get(off.url(prefix + "/v1/ui/channels")).status, 404);
  auto svg = Get(on.url(prefix + "/v1/ui/graph.svg?channel=beta"));
  EXPECT_EQ(IdsIn(svg.body).releases, (std::set<std::string>{"1.0.0", "1.1.1", "1.3.0"})) << svg.body;
}

}  // namespace
}  // namespace cincinnati
