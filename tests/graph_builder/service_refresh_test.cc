// Integration tests of refreshes, readiness and configuration, on real processes.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "core/error_document.h"
#include "core/graph_json.h"
#include "service_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using testing::Get;
using testing::ServiceProcess;
using testing::TempDir;
using testing::WaitFor;
using testing::Count;
using testing::MetricValue;
using testing::WriteFile;

const fs::path kExample = testing::Examples() / "ocp-4x";

std::vector<std::string> Versions(const std::string& body) {
  std::vector<std::string> out;
  auto g = ReadGraphJson(body);
  if (!g.ok()) return out;
  for (const Node& n : g->nodes()) out.push_back(n.version);
  return out;
}

TEST(RefreshTest, PicksUpChangesAndKeepsTheLastGoodGraph) {
  TempDir dir;
  fs::copy(kExample / "graph-data", dir / "gd", fs::copy_options::recursive);
  ServiceProcess builder("graph-builder",
                         {"--releases", (kExample / "releases").string(), "--graph-data", (dir / "gd").string(),
                          "--service.pause_secs", "1", "--disallowed-errors", "deserialize"});
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", builder.url("/graph"),
                                          "--upstream.cincinnati.cache_ttl_secs", "1"});
  const std::string view = engine.url("/graph?channel=stable-4.12");
  ASSERT_TRUE(WaitFor([&] { return Get(view).status == 200; })) << engine.log();
  auto before = Versions(Get(view).body);
  EXPECT_EQ(before, (std::vector<std::string>{"4.12.0", "4.12.1", "4.12.2", "4.12.3", "4.12.4"}));

  // A change on disk is served after the next refresh.
  WriteFile(dir / "gd/channels/stable-4.12.yaml", "name: stable-4.12\nversions: [4.12.4, 4.12.5]\n");
  ASSERT_TRUE(WaitFor([&] { return Versions(Get(view).body) == std::vector<std::string>{"4.12.4", "4.12.5"}; }))
      << builder.log();
  const std::string good = Get(view).body;

  // Broken YAML: the refresh fails, the error is counted and logged with file and
  // reason, and the last good graph stays served.
  auto errors = [&] { return MetricValue(builder, "cincinnati_gb_graph_upstream_errors_total"); };
  EXPECT_EQ(errors(), 0);
  WriteFile(dir / "gd/channels/fast-4.12.yaml", "name: fast-4.12\nversions: [4.12.0,\n");
  ASSERT_TRUE(WaitFor([&] { return errors() >= 1; })) << builder.log();
  EXPECT_NE(builder.log().find("channels/fast-4.12.yaml: deserialize error: invalid YAML"), std::string::npos)
      << builder.log();
  EXPECT_EQ(Get(view).body, good);
  fs::remove(dir / "gd/channels/fast-4.12.yaml");

  // A cycle: the same.
  WriteFile(dir / "gd/raw/metadata.json", R"({"4.12.0": {"io.openshift.upgrades.graph.previous.add": "4.12.5"}})");
  double so_far = errors();
  ASSERT_TRUE(WaitFor([&] { return errors() > so_far; })) << builder.log();
  EXPECT_NE(builder.log().find("would create a cycle: 4.12.5+amd64 -> 4.12.0+amd64"), std::string::npos) << builder.log();
  EXPECT_EQ(Get(view).body, good);
  EXPECT_EQ(Get(builder.url("/readiness", "status")).status, 200);
  EXPECT_EQ(builder.Stop(), 0);
  EXPECT_EQ(engine.Stop(), 0);
}

// A small tmpfs, mounted for the test and unmounted after it: a real "disk full".
class SmallDisk {
 public:
  explicit SmallDisk(const fs::path& dir) : dir_(dir) {
    fs::create_directories(dir_);
    mounted_ = std::system(("mount -t tmpfs -o size=64k tmpfs " + dir_.string() + " 2>/dev/null").c_str()) == 0;
  }
  ~SmallDisk() {
    if (mounted_) std::system(("umount " + dir_.string()).c_str());
  }
  bool mounted() const { return mounted_; }
  void Fill() { std::system(("dd if=/dev/zero of=" + (dir_ / "filler").string() + " bs=4k 2>/dev/null").c_str()); }
  void Free() { fs::remove(dir_ / "filler"); }

 private:
  fs::path dir_;
  bool mounted_ = false;
};

// Graph-data faults after a good graph: an unknown schema version, a file that
// vanishes between listing and reading, and a full disk under the graph-data cache.
// The last good graph stays served, the builder stays ready, the failure is counted
// and its cause logged once however often it repeats.
TEST(RefreshTest, GraphDataFaultsKeepTheLastGoodGraph) {
  TempDir dir;
  fs::copy(kExample / "graph-data", dir / "gd", fs::copy_options::recursive);
  SmallDisk disk(dir / "cache");
  if (!disk.mounted()) GTEST_SKIP() << "mounting a tmpfs needs root";
  ServiceProcess builder("graph-builder", {"--releases", (kExample / "releases").string(), "--graph-data",
                                           (dir / "gd").string(), "--graph-data-cache", (dir / "cache").string(),
                                           "--service.pause_secs", "1"});
  auto graph = [&] { return Get(builder.url("/graph")).body; };
  auto errors = [&] {
    return MetricValue(builder, "cincinnati_gb_graph_upstream_errors_total");
  };
  ASSERT_TRUE(WaitFor([&] { return Get(builder.url("/readiness", "status")).status == 200; })) << builder.log();
  const std::string good = graph();
  ASSERT_FALSE(Versions(good).empty());

  struct Fault {
    const char* name;
    std::function<void()> inject, repair;
    std::string cause;
  };
  std::vector<Fault> faults = {
      {"unknown schema version", [&] { WriteFile(dir / "gd/version", "3.0.0\n"); },
       [&] { WriteFile(dir / "gd/version", "1.1.0\n"); }, "unrecognized graph-data version 3.0.0"},
      {"file vanishing mid-read", [&] { fs::create_symlink(dir / "gone.yaml", dir / "gd/channels/vanishing.yaml"); },
       [&] { fs::remove(dir / "gd/channels/vanishing.yaml"); },
       "channels/vanishing.yaml: vanished while the graph-data was being read"},
  };
  for (const Fault& fault : faults) {
    SCOPED_TRACE(fault.name);
    double before = errors();
    fault.inject();
    ASSERT_TRUE(WaitFor([&] { return errors() >= before + 3; }, std::chrono::seconds(30))) << builder.log();
    EXPECT_EQ(graph(), good);
    EXPECT_EQ(Get(builder.url("/readiness", "status")).status, 200);
    EXPECT_EQ(Count(builder.log(), fault.cause), 1u) << builder.log();
    fault.repair();
    ASSERT_TRUE(WaitFor([&] { return Count(builder.log(), "graph refresh succeeded again after: ") == static_cast<size_t>(1 + (&fault - &faults[0])); }))
        << builder.log();
  }

  // Disk full under the graph-data cache: the graph is still built and served from
  // memory; only the graph-data download waits for space, warned about once.
  const std::string tar_before = Get(builder.url("/graph-data", "public")).body;
  ASSERT_FALSE(tar_before.empty());
  disk.Fill();
  WriteFile(dir / "gd/channels/stable-4.12.yaml", "name: stable-4.12\nversions: [4.12.3, 4.12.4]\n");
  ASSERT_TRUE(WaitFor([&] { return Versions(graph()) != Versions(good) || graph() != good; })) << builder.log();
  ASSERT_TRUE(WaitFor([&] { return builder.log().find("graph-data.tar.gz") != std::string::npos; })) << builder.log();
  // Several refreshes, still one warning.
  const double scrapes = MetricValue(builder, "cincinnati_gb_graph_upstream_scrapes_total");
  ASSERT_TRUE(WaitFor([&] { return MetricValue(builder, "cincinnati_gb_graph_upstream_scrapes_total") >= scrapes + 3; }))
      << builder.log();
  EXPECT_EQ(Count(builder.log(), "cannot write " + (dir / "cache/graph-data.tar.gz").string()), 1u) << builder.log();
  EXPECT_EQ(Get(builder.url("/graph-data", "public")).body, tar_before);  // the last good download
  disk.Free();
  ASSERT_TRUE(WaitFor([&] { return Get(builder.url("/graph-data", "public")).body != tar_before; })) << builder.log();
  EXPECT_EQ(builder.Stop(), 0);
}

TEST(RefreshTest, ReadinessWaitsForTheFirstGoodGraph) {
  TempDir dir;
  fs::copy(kExample / "graph-data", dir / "gd", fs::copy_options::recursive);
  WriteFile(dir / "gd/version", "3.0.0\n");
  ServiceProcess builder("graph-builder", {"--releases", (kExample / "releases").string(), "--graph-data",
                                           (dir / "gd").string(), "--service.pause_secs", "1"});
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", builder.url("/graph"),
                                          "--upstream.cincinnati.cache_ttl_secs", "1"});
  ASSERT_TRUE(WaitFor([&] { return Get(builder.url("/liveness", "status")).status == 200; }));
  EXPECT_EQ(Get(builder.url("/readiness", "status")).status, 503);
  auto empty = Get(builder.url("/graph"));
  EXPECT_EQ(empty.status, 200);
  EXPECT_TRUE(empty.body.empty());
  // The upstream request counter moves before its answer is read: wait for the answer's
  // verdict instead (an empty body is not a graph).
  http::Result failed;
  ASSERT_TRUE(WaitFor([&] {
    failed = Get(engine.url("/graph?channel=stable-4.13"));
    return failed.body.find("failed_json_in") != std::string::npos;
  })) << failed.body << engine.log();
  EXPECT_EQ(failed.status, 500);
  EXPECT_EQ(ErrorDocument::Parse(failed.body)->kind, "failed_json_in") << failed.body;
  EXPECT_EQ(Get(engine.url("/readyz", "status")).status, 503);
  // The engine sees the builder's empty answer before the builder's first refresh has
  // failed (and said why): wait for the line, do not expect it already written.
  EXPECT_TRUE(WaitFor([&] { return builder.log().find("unrecognized graph-data version 3.0.0") != std::string::npos; }))
      << builder.log();

  WriteFile(dir / "gd/version", "1.1.0\n");
  ASSERT_TRUE(WaitFor([&] { return Get(builder.url("/readiness", "status")).status == 200; })) << builder.log();
  ASSERT_TRUE(WaitFor([&] { return Get(engine.url("/readyz", "status")).status == 200; })) << engine.log();
  EXPECT_EQ(Get(engine.url("/graph?channel=stable-4.13")).status, 200);
}

TEST(RefreshTest, UnreachableUpstreamIsFailedUpstreamFetch) {
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", "http://127.0.0.1:1/graph"});
  ASSERT_TRUE(engine.running());
  ASSERT_TRUE(WaitFor([&] { return Get(engine.url("/graph?channel=a")).status == 500; }));
  auto r = Get(engine.url("/graph?channel=a"));
  EXPECT_EQ(ErrorDocument::Parse(r.body)->kind, "failed_upstream_fetch") << r.body;
  EXPECT_NE(r.body.find("failed to fetch upstream graph: "), std::string::npos);
}

TEST(ConfigTest, UnknownSettingsAreNamed) {
  TempDir dir;
  WriteFile(dir / "pe.toml", "[service]\nport = 0\nmax_conections = 5\n");
  ServiceProcess engine("policy-engine", {"-c", (dir / "pe.toml").string()});
  EXPECT_FALSE(engine.running());
  EXPECT_EQ(engine.Stop(), 1);
  EXPECT_NE(engine.log().find("unknown setting 'service.max_conections'"), std::string::npos) << engine.log();

  WriteFile(dir / "gb.toml", "[[plugin_settings]]\nname = \"edge-add-remove\"\nkey_prefx = \"x\"\n");
  ServiceProcess builder("graph-builder", {"-c", (dir / "gb.toml").string()});
  EXPECT_EQ(builder.Stop(), 1);
  EXPECT_NE(builder.log().find("plugin 'edge-add-remove': unknown setting 'key_prefx'"), std::string::npos);

  WriteFile(dir / "gb2.toml", "[[plugin_settings]]\nname = \"release-scrape-dockerv3\"\n");
  ServiceProcess other("graph-builder", {"-c", (dir / "gb2.toml").string()});
  EXPECT_EQ(other.Stop(), 1);
  EXPECT_NE(other.log().find("unknown plugin 'release-scrape-dockerv3'"), std::string::npos);
}

// A reference-style configuration file: plugin chain and service settings from TOML,
// the file winning over a flag given for the same key.
TEST(ConfigTest, TomlConfigurationWinsOverFlags) {
  TempDir dir;
  WriteFile(dir / "gb.toml",
            "verbosity = \"v\"\n"
            "[service]\npath_prefix = \"/from/file/\"\npause_secs = 30\nmandatory_client_parameters = []\n"
            "[[plugin_settings]]\nname = \"local-releases\"\npath = \"" + (kExample / "releases").string() + "\"\n"
            "[[plugin_settings]]\nname = \"openshift-secondary-metadata-parse\"\ndata_directory = \"" +
            (kExample / "graph-data").string() + "\"\ndisallowed_errors = [\"file\", \"deserialize\"]\n"
            "[[plugin_settings]]\nname = \"edge-add-remove\"\n");
  WriteFile(dir / "pe.toml",
            "[service]\npath_prefix = \"/api/upgrades_info\"\nmandatory_client_parameters = [\"channel\", \"arch\"]\n"
            "[[policy]]\nname = \"cincinnati-graph-fetch\"\nupstream = \"PLACEHOLDER\"\n"
            "[[policy]]\nname = \"channel-filter\"\n[[policy]]\nname = \"arch-filter\"\n");
  ServiceProcess builder("graph-builder", {"-c", (dir / "gb.toml").string(), "--service.path_prefix", "/from/flag"});
  ASSERT_TRUE(WaitFor([&] { return Get(builder.url("/readiness", "status")).status == 200; })) << builder.log();
  EXPECT_EQ(Get(builder.url("/from/flag/graph")).status, 404);
  EXPECT_EQ(Get(builder.url("/from/file/graph")).status, 200);
  // This chain has no source that makes a graph-data tarball.
  auto tar = Get(builder.url("/from/file/graph-data", "public"));
  EXPECT_EQ(tar.status, 500);
  EXPECT_EQ(ErrorDocument::Parse(tar.body)->kind, "file_open_err");

  std::string pe = testing::ReadFile(dir / "pe.toml");
  pe.replace(pe.find("PLACEHOLDER"), 11, builder.url("/from/file/graph"));
  WriteFile(dir / "pe.toml", pe);
  ServiceProcess engine("policy-engine", {"-c", (dir / "pe.toml").string()});
  ASSERT_TRUE(WaitFor([&] { return Get(engine.url("/readyz", "status")).status == 200; })) << engine.log();
  auto missing = Get(engine.url("/api/upgrades_info/graph?channel=stable-4.13"));
  EXPECT_EQ(missing.body, R"({"kind":"missing_params","value":"mandatory client parameters missing: arch"})");
  EXPECT_EQ(Get(engine.url("/api/upgrades_info/graph?channel=stable-4.13&arch=amd64")).status, 200);
  auto none = Get(engine.url("/api/upgrades_info/graph"));
  EXPECT_EQ(none.body, R"({"kind":"missing_params","value":"mandatory client parameters missing: arch, channel"})");
  auto openapi = Get(engine.url("/api/upgrades_info/openapi")).body;
  EXPECT_NE(openapi.find(R"({"in":"query","name":"channel","required":true,"schema":{"type":"string"}})"),
            std::string::npos);
}

TEST(ConfigTest, MainAndStatusOnOneAddressIsRefused) {
  ServiceProcess engine("policy-engine", {"--service.port", "18181", "--status.port", "18181"});
  EXPECT_EQ(engine.Stop(), 1);
  EXPECT_NE(engine.log().find("cannot both use"), std::string::npos) << engine.log();
}

}  // namespace
}  // namespace cincinnati

namespace cincinnati {
namespace {

// Replicas agree without shared state: three policy engines and `serve`, same clock,
// same cluster ids, byte-identical answers that differ between clusters mid-window.
TEST(PhasedServiceTest, ReplicasAndServeAgree) {
  const fs::path example = testing::Examples() / "phased";
  const std::string now = "2020-05-13T00:00:00Z";  // the middle of 4.4.3's patch window
  ServiceProcess builder("graph-builder", {"--releases", (example / "releases").string(), "--graph-data",
                                           (example / "graph-data").string()});
  std::vector<std::unique_ptr<ServiceProcess>> engines;
  for (int i = 0; i < 3; ++i) {
    engines.push_back(std::make_unique<ServiceProcess>(
        "policy-engine", std::vector<std::string>{"--upstream.cincinnati.url", builder.url("/graph"), "--testing.now", now}));
  }
  ServiceProcess serve("serve", {"--releases", (example / "releases").string(), "--graph-data",
                                 (example / "graph-data").string(), "--service.path_prefix", "", "--testing.now", now});
  for (auto& e : engines) ASSERT_TRUE(WaitFor([&] { return Get(e->url("/readyz", "status")).status == 200; })) << e->log();
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readyz", "status")).status == 200; })) << serve.log();
  std::set<std::string> distinct;
  for (const char* id : {"2b1d6a9e-0c61-4d8e-a5f7-2f7f3c1c9e01", "8f0a2c55-3b2e-4f0b-9d1e-6c7a8b9d0e12",
                         "c0ffee00-1234-4abc-8def-0123456789ab", "d15ea5e0-aaaa-4bbb-8ccc-ddddeeeeffff", "not-a-uuid"}) {
    std::string query = std::string("/graph?channel=stable-4.4&id=") + id;
    std::string first = Get(engines[0]->url(query)).body;
    ASSERT_EQ(first.rfind(R"({"version":1,"nodes":[)", 0), 0u) << first;
    EXPECT_EQ(first.find("phased"), std::string::npos) << "internal keys must not reach clients";
    for (auto& e : engines) EXPECT_EQ(Get(e->url(query)).body, first) << id;
    EXPECT_EQ(Get(serve.url(query)).body, first) << id;
    // Compressed as the CVO asks (assembled from pieces): the same bytes once inflated
    // (libcurl checks the CRC), and an ETag that a second request can revalidate.
    for (const std::string& url : {engines[1]->url(query), serve.url(query)}) {
      http::Result gz = http::Get(url, {.timeout = std::chrono::seconds(10), .accept_gzip = true});
      ASSERT_EQ(gz.status, 200) << gz.error;
      ASSERT_NE(gz.Header("Content-Encoding"), nullptr);
      EXPECT_EQ(*gz.Header("Content-Encoding"), "gzip");
      EXPECT_EQ(gz.body, first) << id;
      ASSERT_NE(gz.Header("ETag"), nullptr);
      http::Result again = http::Get(url, {.headers = {"If-None-Match: " + *gz.Header("ETag")},
                                           .timeout = std::chrono::seconds(10), .accept_gzip = true});
      EXPECT_EQ(again.status, 304) << id;
    }
    distinct.insert(first);
  }
  EXPECT_GE(distinct.size(), 2u) << "mid-window, clusters must not all see the same graph";

  // One day into the windows: the patch edge is half way, the minor edge 1/14 of the way.
  for (ServiceProcess* p : {engines[0].get(), &serve}) {
    std::string metrics = Get(p->url("/metrics", "status")).body;
    EXPECT_NE(metrics.find("# TYPE cincinnati_pe_phased_update_rollout gauge"), std::string::npos);
    EXPECT_NE(metrics.find("cincinnati_pe_phased_update_rollout{channel=\"stable-4.4\",from=\"4.4.2\",to=\"4.4.3\"} 0.5\n"),
              std::string::npos) << metrics;
    EXPECT_NE(metrics.find("cincinnati_pe_phased_update_rollout{channel=\"stable-4.4\",from=\"4.3.18\",to=\"4.4.3\"} 0.0714"),
              std::string::npos) << metrics;
    EXPECT_EQ(metrics.find("channel=\"fast-4.4\""), std::string::npos);  // no rules, no window
  }
}

}  // namespace
}  // namespace cincinnati

namespace cincinnati {
namespace {

// Channel targets: one root (the cluster's version), one leaf (the target), every edge
// on a path between them, and a one-hop reading offers only releases that lead there.
void CheckTargetView(const std::string& body, const std::string& root, const std::string& leaf) {
  auto g = ReadGraphJson(body);
  ASSERT_TRUE(g.ok()) << body;
  std::set<std::string> roots, leaves;
  for (NodeIndex i = 0; i < g->node_count(); ++i) {
    if (g->predecessors(i).empty()) roots.insert(g->node(i).version);
    if (g->successors(i).empty()) leaves.insert(g->node(i).version);
    EXPECT_FALSE(g->node(i).metadata.count("io.openshift.upgrades.graph.channel.targets"));
  }
  EXPECT_EQ(roots, std::set<std::string>{root}) << body;
  EXPECT_EQ(leaves, std::set<std::string>{leaf}) << body;
  // CVO-style one hop from the current version: every offered release reaches the leaf.
  auto reaches_leaf = [&](NodeIndex start) {
    std::vector<NodeIndex> stack{start};
    std::set<NodeIndex> seen{start};
    while (!stack.empty()) {
      NodeIndex x = stack.back();
      stack.pop_back();
      if (g->node(x).version == leaf) return true;
      for (NodeIndex y : g->successors(x)) {
        if (seen.insert(y).second) stack.push_back(y);
      }
    }
    return false;
  };
  for (NodeIndex next : g->successors(*g->Find(root))) EXPECT_TRUE(reaches_leaf(next)) << g->node(next).version;
}

TEST(ChannelTargetTest, SeedAndFourXExamples) {
  const fs::path seed = testing::Examples() / "seed";
  ServiceProcess serve("serve", {"--releases", (seed / "releases").string(), "--graph-data", (seed / "graph-data").string(),
                                 "--service.path_prefix", "", "--views.channel_targets", "*"});
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readyz", "status")).status == 200; })) << serve.log();
  // A beta cluster on 1.0.0: beta's newest release 1.3.0 is the target.
  std::string beta = Get(serve.url("/graph?channel=beta&version=1.0.0")).body;
  CheckTargetView(beta, "1.0.0", "1.3.0");
  // Alpha on 1.1.0: 1.2.0 leads to 1.3.0 and stays; 1.0.0 cannot be reached and is gone.
  std::string alpha = Get(serve.url("/graph?channel=alpha&version=1.1.0")).body;
  CheckTargetView(alpha, "1.1.0", "1.3.0");
  EXPECT_EQ(alpha.find("\"1.0.0\""), std::string::npos);
  // The target itself: one node, no edges; an unknown version: the whole channel.
  EXPECT_EQ(ReadGraphJson(Get(serve.url("/graph?channel=beta&version=1.3.0")).body)->node_count(), 1u);
  EXPECT_EQ(Get(serve.url("/graph?channel=beta&version=9.9.9")).body, Get(serve.url("/graph?channel=beta")).body);

  const fs::path four = testing::Examples() / "ocp-4x";
  testing::TempDir dir;
  fs::copy(four / "graph-data", dir / "gd", fs::copy_options::recursive);
  ServiceProcess four_x("serve", {"--releases", (four / "releases").string(), "--graph-data", (dir / "gd").string(),
                                  "--service.path_prefix", "", "--views.channel_targets", "stable-4.13",
                                  "--service.pause_secs", "1"});
  ASSERT_TRUE(WaitFor([&] { return Get(four_x.url("/readyz", "status")).status == 200; })) << four_x.log();
  std::string view = Get(four_x.url("/graph?channel=stable-4.13&version=4.12.3")).body;
  CheckTargetView(view, "4.12.3", "4.13.2");
  // Every release of this small channel is on a path from 4.12.3; from 4.12.4 it is not.
  std::string from_later = Get(four_x.url("/graph?channel=stable-4.13&version=4.12.4")).body;
  CheckTargetView(from_later, "4.12.4", "4.13.2");
  EXPECT_EQ(from_later.find("\"4.12.3\""), std::string::npos);
  EXPECT_LT(from_later.size(), Get(four_x.url("/graph?channel=stable-4.13")).body.size());
  // Not enabled for fast-4.13: the reference's answer.
  EXPECT_EQ(Get(four_x.url("/graph?channel=fast-4.13&version=4.12.3")).body, Get(four_x.url("/graph?channel=fast-4.13")).body);

  // An explicit target in graph-data, then a bad one: refused, last good graph kept.
  testing::WriteFile(dir / "gd/channels/stable-4.13.yaml",
                     "name: stable-4.13\ntarget: 4.13.1\nversions: [4.12.3, 4.12.4, 4.13.0, 4.13.1, 4.13.2]\n");
  ASSERT_TRUE(WaitFor([&] {
    return Get(four_x.url("/graph?channel=stable-4.13&version=4.12.3")).body.find("\"4.13.2\"") == std::string::npos;
  })) << four_x.log();
  std::string explicit_view = Get(four_x.url("/graph?channel=stable-4.13&version=4.12.3")).body;
  CheckTargetView(explicit_view, "4.12.3", "4.13.1");
  testing::WriteFile(dir / "gd/channels/stable-4.13.yaml", "name: stable-4.13\ntarget: 4.14.0\nversions: [4.13.1]\n");
  ASSERT_TRUE(WaitFor([&] { return four_x.log().find("target 4.14.0 is not one of the channel's versions") != std::string::npos; }))
      << four_x.log();
  EXPECT_NE(four_x.log().find("channels/stable-4.13.yaml"), std::string::npos);
  EXPECT_EQ(Get(four_x.url("/graph?channel=stable-4.13&version=4.12.3")).body, explicit_view);
}

}  // namespace
}  // namespace cincinnati
