// Releases whose own metadata sets keys the graph builder reserves (phased rollouts,
// hotfix rules, channel targets) or carries unusable directives: pushed as real images
// to the real docker-registry, or written into a raw graph file. The graph builder and
// the policy engines behind it stay up, leave exactly those releases out, name each
// once in the log and count them; everything else is served.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/graph_json.h"
#include "registry_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using testing::Get;
using testing::MetricValue;
using testing::ServiceProcess;
using testing::WaitFor;

struct HostileRelease {
  std::string version, key, value;
};

const std::vector<HostileRelease> kHostile = {
    {"4.1.2", "io.openshift.upgrades.graph.phased.start", "stable-4.1=garbage"},
    {"4.1.3", "io.openshift.upgrades.graph.phased.rollouts", "stable-4.1:minor=-1"},
    {"4.1.4", "io.openshift.upgrades.graph.hotfix.rules", "x"},
    {"4.1.5", "io.openshift.upgrades.graph.channel.targets", "stable-4.1"},
    {"4.1.6", "io.openshift.upgrades.graph.previous.remove_regex", "4[.(1"},
    {"4.1.7", "io.openshift.upgrades.graph.previous.add", "not-a-version"},
};

// ocp-4x's graph-data plus a channel listing every 4.1 release.
fs::path GraphData(const testing::TempDir& dir) {
  fs::copy(testing::Examples() / "ocp-4x/graph-data", dir / "graph-data", fs::copy_options::recursive);
  std::string versions = "- 4.1.0\n- 4.1.1\n";
  for (const HostileRelease& h : kHostile) versions += "- " + h.version + "\n";
  testing::WriteFile(dir / "graph-data/channels/stable-4.1.yaml", "name: stable-4.1\nversions:\n" + versions);
  return dir / "graph-data";
}

// The graph builder (whatever its release source) and a policy engine behind it serve
// 4.1.0 -> 4.1.1 and nothing of the hostile releases.
void ExpectServedWithout(ServiceProcess& builder, size_t rejected) {
  ASSERT_TRUE(WaitFor([&] { return Get(builder.url("/readiness", "status")).status == 200; })) << builder.log();
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", builder.url("/graph")});
  ASSERT_TRUE(WaitFor([&] { return Get(engine.url("/readyz", "status")).status == 200; })) << engine.log();
  auto view = ReadGraphJson(Get(engine.url("/graph?channel=stable-4.1")).body);
  ASSERT_TRUE(view.ok()) << engine.log();
  ASSERT_EQ(view->node_count(), 2u) << WriteGraphJson(*view);
  EXPECT_TRUE(view->HasEdge(*view->Find("4.1.0"), *view->Find("4.1.1")));
  // Every hostile release named once in the log (however many refreshes ran), counted
  // in a metric; the refreshes succeeded.
  ASSERT_TRUE(WaitFor([&] { return MetricValue(builder, "cincinnati_gb_graph_upstream_scrapes_total") >= 3; }))
      << builder.log();
  std::string log = builder.log();
  for (const HostileRelease& h : kHostile) {
    EXPECT_EQ(testing::Count(log, h.version + "+amd64: release left out of the graph"), 1u) << h.version << "\n" << log;
  }
  EXPECT_EQ(MetricValue(builder, "cincinnati_gb_graph_upstream_rejected_releases"), rejected);
  EXPECT_EQ(MetricValue(builder, "cincinnati_gb_graph_upstream_errors_total"), 0);
  EXPECT_EQ(engine.Stop(), 0);
  EXPECT_EQ(builder.Stop(), 0);
}

TEST(HostileReleaseTest, RegistryImagesWithReservedKeysAreLeftOut) {
  testing::LocalRegistry registry;
  ASSERT_TRUE(registry.ready()) << registry.log();
  auto publish = [&](const std::string& tag, const std::string& args) {
    auto r = testing::RunCincinnati("release new --to " + registry.url() + "/ocp/release:" + tag + " " + args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  publish("4.1.0", "--version 4.1.0");
  publish("4.1.1", "--version 4.1.1 --previous 4.1.0");
  for (const HostileRelease& h : kHostile) {
    publish(h.version, fmt::format("--version {} --previous 4.1.1 --metadata '{}={}'", h.version, h.key, h.value));
  }
  testing::TempDir dir;
  ServiceProcess builder("graph-builder", {"--upstream.registry.url", registry.url(), "--upstream.registry.repository",
                                           "ocp/release", "--graph-data", GraphData(dir).string(),
                                           "--service.pause_secs", "1"});
  ExpectServedWithout(builder, kHostile.size());
}

TEST(HostileReleaseTest, RawGraphFileNodesWithReservedKeysAreLeftOut) {
  testing::TempDir dir;
  Graph raw;
  auto add = [&](const std::string& version, Metadata extra) {
    Metadata m{{"io.openshift.upgrades.graph.release.arch", "amd64"},
               {"io.openshift.upgrades.graph.release.manifestref", "sha256:" + std::string(64, 'a')}};
    m.insert(extra.begin(), extra.end());
    return raw.AddNode(Node::Concrete(version + "+amd64", "quay.io/ocp@sha256:" + std::string(64, 'a'), m)).value();
  };
  NodeIndex a = add("4.1.0", {});
  NodeIndex b = add("4.1.1", {});
  ASSERT_TRUE(raw.AddEdge(a, b).ok());
  for (const HostileRelease& h : kHostile) {
    NodeIndex x = add(h.version, {{h.key, h.value}});
    ASSERT_TRUE(raw.AddEdge(b, x).ok());
  }
  testing::WriteFile(dir / "raw.json", WriteGraphJson(raw));
  ServiceProcess builder("graph-builder", {"--releases", (dir / "raw.json").string(), "--graph-data",
                                           GraphData(dir).string(), "--service.pause_secs", "1"});
  ExpectServedWithout(builder, kHostile.size());
}

}  // namespace
}  // namespace cincinnati
