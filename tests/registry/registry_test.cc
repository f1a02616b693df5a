// The registry path end to end against the real Debian docker-registry: releases are
// published with `cincinnati release new` (or, for odd images, the same library), and
// the graph builder's scrape must produce exactly the expected graph.
#include <gtest/gtest.h>

#include <set>

#include <fmt/format.h>

#include "builder/pipeline.h"
#include "builder/registry_source.h"
#include "core/graph_json.h"
#include "core/graph_records.h"
#include "registry/release_image.h"
#include "gpg_util.h"
#include "registry/layer.h"
#include "registry_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using testing::LocalRegistry;
using testing::RunCincinnati;

const fs::path kGraphData = testing::Examples() / "ocp-4x" / "graph-data";

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(registry_.ready()) << registry_.log(); }

  // Publishes with the CLI; returns the pull spec printed.
  std::string Publish(const std::string& repo, const std::string& tag, const std::string& args) {
    auto r = RunCincinnati("release new --to " + registry_.url() + "/" + repo + ":" + tag + " " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  }

  Result<Graph> Scrape(const std::string& repo, size_t page_size = 20) {
    LocalBuildOptions options;
    RegistrySourceSettings s;
    s.registry = registry_.url();
    s.repository = repo;
    s.tags_page_size = page_size;
    s.client.retry_pause = std::chrono::milliseconds(50);
    options.registry = s;
    options.graph_data = kGraphData;
    return BuildLocalGraph(options, context_);
  }

  registry::RegistryClient Client(const std::string& repo) {
    return registry::RegistryClient(registry::ParseRepositoryLocation(registry_.url(), repo).value(), {},
                                    {.retry_pause = std::chrono::milliseconds(50)});
  }

  static std::set<std::string> Edges(const Graph& g) {
    std::set<std::string> out;
    for (const Edge& e : g.Edges()) out.insert(g.node(e.from).version + "->" + g.node(e.to).version);
    return out;
  }

  LocalRegistry registry_;
  TransformContext context_;
};

TEST_F(RegistryTest, LinearBranchingAndNextEdges) {
  std::string first = Publish("ocp/release", "4.12.0", "--version 4.12.0");
  Publish("ocp/release", "4.12.1", "--version 4.12.1 --previous 4.12.0 --metadata url=https://errata/1");
  Publish("ocp/release", "4.12.2", "--version 4.12.2 --previous 4.12.0,4.12.1 --chunk-size 64");
  Publish("ocp/release", "4.13.0", "--version 4.13.0 --previous 4.12.2");
  Publish("ocp/release", "4.12.3", "--version 4.12.3 --previous 4.12.2 --next 4.13.0");
  Publish("ocp/release", "4.13.0-arm64", "--version 4.13.0 --arch arm64 --previous 4.12.3");
  auto g = Scrape("ocp/release");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Edges(*g), (std::set<std::string>{
                           "4.12.0+amd64->4.12.1+amd64", "4.12.0+amd64->4.12.2+amd64", "4.12.1+amd64->4.12.2+amd64",
                           "4.12.2+amd64->4.13.0+amd64", "4.12.2+amd64->4.12.3+amd64", "4.12.3+amd64->4.13.0+amd64",
                           "4.12.3+arm64->4.13.0+arm64"}));
  const Node& n = g->node(*g->Find("4.12.0+amd64"));
  EXPECT_EQ(n.payload, first);
  // A plain-HTTP registry: the pull spec still has no scheme (no container tool takes one).
  EXPECT_EQ(n.payload,
            registry_.host_port() + "/ocp/release@" + n.metadata.at("io.openshift.upgrades.graph.release.manifestref"));
  EXPECT_EQ(g->node(*g->Find("4.12.1+amd64")).metadata.at("url"), "https://errata/1");
  EXPECT_FALSE(g->node(*g->Find("4.12.3+arm64")).concrete);  // named, not released: abstract
  // graph-data applies to scraped releases as to any other source.
  EXPECT_NE(g->node(*g->Find("4.12.2+amd64")).metadata.count("io.openshift.upgrades.graph.release.channels"), 0u);
  EXPECT_EQ(context_.raw_releases, 6u);

  auto info = RunCincinnati("release info " + registry_.url() + "/ocp/release:4.13.0-arm64");
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find(R"("architecture":"arm64")"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find(R"("previous":["4.12.3"])"), std::string::npos) << info.out;
}

TEST_F(RegistryTest, TopLayerWinsAndImagesWithoutMetadataAreSkipped) {
  auto client = Client("odd/release");
  auto bottom = registry::MakeLayer({{"release-manifests/release-metadata",
                                      R"({"kind":"cincinnati-metadata-v0","version":"9.9.9"})"}});
  auto top = registry::MakeLayer({{"./release-manifests/release-metadata",
                                   R"({"kind":"cincinnati-metadata-v0","version":"1.0.1","previous":["1.0.0"]})"}});
  auto plain = registry::MakeLayer({{"usr/share/doc/readme", "not a release"}});
  ASSERT_TRUE(bottom.ok() && top.ok() && plain.ok());
  ASSERT_TRUE(registry::PushImage(client, "two-layers", "amd64", {*bottom, *top}).ok());
  ASSERT_TRUE(registry::PushImage(client, "no-metadata", "amd64", {*plain}).ok());
  // A layer that is not a gzip tar is skipped too (its digest matches; it is just junk).
  ASSERT_TRUE(registry::PushImage(client, "junk-layer", "amd64", {registry::Layer{"not gzip at all", "sha256:00"}}).ok());
  Publish("odd/release", "1.0.0", "--version 1.0.0");
  auto g = Scrape("odd/release");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Edges(*g), std::set<std::string>{"1.0.0+amd64->1.0.1+amd64"});
  EXPECT_FALSE(g->Find("9.9.9+amd64").has_value());
  std::string warnings;
  for (const auto& d : context_.diagnostics.items()) warnings += d.location + ": " + d.message + "\n";
  EXPECT_NE(warnings.find(":no-metadata: skipped"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find(":junk-layer: skipped"), std::string::npos) << warnings;
}

TEST_F(RegistryTest, ManifestListOfTwoArchitecturesIsMulti) {
  auto client = Client("multi/release");
  std::string entries;
  for (const char* arch : {"amd64", "arm64"}) {
    std::string digest = Publish("multi/release", std::string("4.14.0-") + arch,
                                 std::string("--version 4.14.0 --previous 4.13.0 --arch ") + arch +
                                     " --metadata release.openshift.io/architecture=multi");
    auto manifest = client.GetManifest(digest.substr(digest.find('@') + 1));
    ASSERT_TRUE(manifest.ok());
    entries += fmt::format(R"({}{{"mediaType":"{}","size":{},"digest":"{}","platform":{{"architecture":"{}","os":"linux"}}}})",
                           entries.empty() ? "" : ",", registry::kDockerManifest, manifest->body.size(),
                           manifest->digest, arch);
  }
  std::string list = fmt::format(R"({{"schemaVersion":2,"mediaType":"{}","manifests":[{}]}})",
                                 registry::kDockerManifestList, entries);
  auto list_digest = client.PushManifest("4.14.0-multi", registry::kDockerManifestList, list);
  ASSERT_TRUE(list_digest.ok()) << list_digest.status().message();
  auto g = Scrape("multi/release");
  ASSERT_TRUE(g.ok()) << g.status().message();
  // The per-arch images are shards of a multi release and are skipped.
  ASSERT_TRUE(g->Find("4.14.0+multi").has_value());
  EXPECT_FALSE(g->Find("4.14.0+amd64").has_value());
  EXPECT_FALSE(g->Find("4.14.0+arm64").has_value());
  const Node& multi = g->node(*g->Find("4.14.0+multi"));
  EXPECT_EQ(multi.metadata.at("io.openshift.upgrades.graph.release.manifestref"), *list_digest);
  EXPECT_EQ(multi.metadata.at("io.openshift.upgrades.graph.release.arch"), "multi");
  EXPECT_EQ(Edges(*g), std::set<std::string>{"4.13.0+multi->4.14.0+multi"});
}

TEST_F(RegistryTest, CycleAndConflictingDigestsFailTheScrape) {
  Publish("cyclic/release", "0.0.1", "--version 0.0.1");
  Publish("cyclic/release", "0.0.2", "--version 0.0.2 --previous 0.0.1 --next 0.0.1");
  auto cyclic = Scrape("cyclic/release");
  ASSERT_FALSE(cyclic.ok());
  EXPECT_EQ(cyclic.status().code(), Status::Code::kCycle) << cyclic.status().message();

  Publish("dup/release", "5.0.0", "--version 5.0.0");
  Publish("dup/release", "5.0.0-again", "--version 5.0.0 --metadata different=yes");
  auto dup = Scrape("dup/release");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("mismatched manifest ref for concrete release 5.0.0+amd64"), std::string::npos)
      << dup.status().message();
}

TEST_F(RegistryTest, TagsOverSeveralPages) {
  auto client = Client("many/release");
  for (int i = 0; i < 45; ++i) {
    registry::NewRelease r;
    r.metadata.version = Version(1, 0, static_cast<uint64_t>(i));
    if (i > 0) r.metadata.previous = {Version(1, 0, static_cast<uint64_t>(i - 1))};
    ASSERT_TRUE(registry::PushRelease(client, "v1.0." + std::to_string(i), r).ok());
  }
  auto tags = client.ListTags(20);
  ASSERT_TRUE(tags.ok());
  EXPECT_EQ(tags->size(), 45u);
  auto g = Scrape("many/release", 7);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->node_count(), 45u);
  EXPECT_EQ(g->edge_count(), 44u);
}

TEST_F(RegistryTest, CorruptBlobAndDownRegistryFail) {
  Publish("bad/release", "1.0.0", "--version 1.0.0");
  // Corrupt every stored layer blob on disk: the registry serves bytes that do not
  // match their digest, and the scrape must refuse them.
  size_t corrupted = 0;
  for (const auto& e : fs::recursive_directory_iterator(registry_.storage())) {
    if (e.path().filename() != "data" || e.path().string().find("/blobs/") == std::string::npos) continue;
    std::string bytes = testing::ReadFile(e.path());
    if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x1f) continue;  // gzip layers only
    bytes[bytes.size() / 2] ^= 0x55;
    testing::WriteFile(e.path(), bytes);
    ++corrupted;
  }
  ASSERT_GT(corrupted, 0u);
  auto bad = Scrape("bad/release");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("does not match digest"), std::string::npos) << bad.status().message();

  registry_.Stop();
  auto down = Scrape("bad/release");
  ASSERT_FALSE(down.ok());
  EXPECT_NE(down.status().message().find("listing tags"), std::string::npos) << down.status().message();
}

// The graph builder service scraping a registry: a later cyclic release fails the
// refresh, the error is counted and logged, and the last good graph stays served.
TEST_F(RegistryTest, GraphBuilderKeepsTheLastGoodGraph) {
  Publish("svc/release", "2.0.0", "--version 2.0.0");
  Publish("svc/release", "2.0.1", "--version 2.0.1 --previous 2.0.0");
  testing::ServiceProcess builder("graph-builder", {"--upstream.registry.url", registry_.url(),
                                                    "--upstream.registry.repository", "svc/release", "--graph-data",
                                                    kGraphData.string(), "--service.pause_secs", "1"});
  ASSERT_TRUE(testing::WaitFor([&] { return testing::Get(builder.url("/readiness", "status")).status == 200; }))
      << builder.log();
  std::string good = testing::Get(builder.url("/graph")).body;
  ASSERT_NE(good.find("2.0.1+amd64"), std::string::npos);
  std::string metrics = testing::Get(builder.url("/metrics", "status")).body;
  EXPECT_NE(metrics.find("cincinnati_gb_graph_upstream_scrape_progress{item=\"tags_listed\"} 2"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("cincinnati_gb_graph_upstream_scrape_progress{item=\"images_read\"} 2"), std::string::npos);
  Publish("svc/release", "2.0.2", "--version 2.0.2 --previous 2.0.1 --next 2.0.0");
  ASSERT_TRUE(testing::WaitFor([&] {
    return testing::Get(builder.url("/metrics", "status")).body.find("cincinnati_gb_graph_upstream_errors_total 0") ==
           std::string::npos;
  })) << builder.log();
  EXPECT_NE(builder.log().find("would create a cycle"), std::string::npos) << builder.log();
  EXPECT_EQ(testing::Get(builder.url("/graph")).body, good);
  EXPECT_EQ(builder.Stop(), 0);
}

}  // namespace
}  // namespace cincinnati

namespace cincinnati {
namespace {

// A restart with the on-disk cache reads manifests but downloads no layer again.
TEST(RegistryCacheTest, DiskCacheSurvivesARestart) {
  testing::LocalRegistry registry;
  ASSERT_TRUE(registry.ready()) << registry.log();
  for (int i = 0; i < 5; ++i) {
    auto r = testing::RunCincinnati("release new --version 3.0." + std::to_string(i) + " --to " + registry.url() +
                                    "/cache/release:3.0." + std::to_string(i));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  testing::TempDir cache;
  RegistrySourceSettings s;
  s.registry = registry.url();
  s.repository = "cache/release";
  s.cache_directory = (cache / "releases").string();
  RegistryReleaseSource first(s);
  TransformContext c1;
  auto g1 = first.Apply(Graph(), c1);
  ASSERT_TRUE(g1.ok()) << g1.status().message();
  EXPECT_EQ(first.counters().layers_fetched.load(), 5u);
  auto again = first.Apply(Graph(), c1);  // warm: memory hits
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(first.counters().layers_fetched.load(), 5u);
  EXPECT_EQ(first.counters().cache_hits.load(), 5u);

  RegistryReleaseSource restarted(s);  // a new process: empty memory, same directory
  TransformContext c2;
  auto g2 = restarted.Apply(Graph(), c2);
  ASSERT_TRUE(g2.ok()) << g2.status().message();
  EXPECT_EQ(restarted.counters().layers_fetched.load(), 0u);
  EXPECT_EQ(restarted.counters().disk_hits.load(), 5u);
  EXPECT_EQ(WriteGraphJson(*g2), WriteGraphJson(*g1));
  bool progress = false;
  for (const auto& d : c2.diagnostics.items()) progress |= d.message.find("5 cache hits (5 from disk)") != std::string::npos;
  EXPECT_TRUE(progress);
}

// TLS with a private CA and htpasswd basic auth, credentials from a dockercfg file.
TEST(RegistryAuthTest, TlsAndBasicAuthWithDockerConfig) {
  testing::LocalRegistry registry(/*secure=*/true, "robot", "s3cret");
  ASSERT_TRUE(registry.ready()) << registry.log();
  std::string to = registry.host_port() + "/secure/release:6.0.0";  // no scheme: https
  auto anonymous = testing::RunCincinnati("release new --version 6.0.0 --to " + to + " --root-certificate-dir " +
                                          registry.ca_dir());
  EXPECT_NE(anonymous.exit_code, 0);
  auto untrusted = testing::RunCincinnati("release new --version 6.0.0 --to " + to + " --username robot --password s3cret");
  EXPECT_NE(untrusted.exit_code, 0);  // the private CA is not trusted by default
  auto pushed = testing::RunCincinnati("release new --version 6.0.0 --to " + to +
                                       " --username robot --password s3cret --root-certificate-dir " + registry.ca_dir());
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  EXPECT_EQ(pushed.out.rfind(registry.host_port() + "/secure/release@sha256:", 0), 0u) << pushed.out;

  testing::TempDir dir;
  // "robot:s3cret" in base64, under the most specific key.
  testing::WriteFile(dir / "config.json", "{\"auths\":{\"" + registry.host_port() +
                                              "/secure\":{\"auth\":\"cm9ib3Q6czNjcmV0\"},\"" + registry.host_port() +
                                              "\":{\"auth\":\"d3Jvbmc6d3Jvbmc=\"}}}");
  RegistrySourceSettings s;
  s.registry = registry.host_port();
  s.repository = "secure/release";
  s.credentials_path = (dir / "config.json").string();
  s.client.ca_path = registry.ca_dir();
  TransformContext context;
  auto g = RegistryReleaseSource(s).Apply(Graph(), context);
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->node_count(), 1u);
  EXPECT_EQ(g->node(0).payload.rfind(registry.host_port() + "/secure/release@sha256:", 0), 0u);

  // Only the less specific (wrong) entry: refused.
  testing::WriteFile(dir / "wrong.json", "{\"auths\":{\"" + registry.host_port() + "\":{\"auth\":\"d3Jvbmc6d3Jvbmc=\"}}}");
  s.credentials_path = (dir / "wrong.json").string();
  auto refused = RegistryReleaseSource(s).Apply(Graph(), context);
  EXPECT_FALSE(refused.ok());

  // The release commands take the same dockercfg file as the graph builder.
  auto info = testing::RunCincinnati("release info " + to + " --credentials-file " + (dir / "config.json").string() +
                                     " --root-certificate-dir " + registry.ca_dir());
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("\"version\":\"6.0.0\""), std::string::npos) << info.out;
  auto wrong = testing::RunCincinnati("release info " + to + " --credentials-file " + (dir / "wrong.json").string() +
                                      " --root-certificate-dir " + registry.ca_dir());
  EXPECT_NE(wrong.exit_code, 0);
}

}  // namespace
}  // namespace cincinnati

namespace cincinnati {
namespace {

// Graph-data as a signed image: pushed with `graph-data push`, signed with a fresh key,
// verified and unpacked by the graph builder, served as graph-data.tar.gz; an untrusted
// key keeps the service unready; a new revision under the same tag is followed.
TEST(GraphDataImageTest, SignedImageEndToEnd) {
  testing::LocalRegistry registry;
  ASSERT_TRUE(registry.ready()) << registry.log();
  const fs::path example = testing::Examples() / "ocp-4x";
  const std::string image = registry.url() + "/ota/graph-data:latest";
  testing::TempDir work;
  fs::copy(example / "graph-data", work / "gd", fs::copy_options::recursive);

  testing::Signer signer("graph-data"), stranger("stranger");
  ASSERT_TRUE(signer.ok() && stranger.ok());
  auto push_and_sign = [&](int slot) {
    auto pushed = testing::RunCincinnati("graph-data push " + (work / "gd").string() + " --to " + image);
    EXPECT_EQ(pushed.exit_code, 0) << pushed.err;
    std::string digest = pushed.out.substr(pushed.out.find('@') + 1);
    digest.erase(digest.find('\n'));
    std::string sig = signer.Sign(digest);
    testing::WriteFile(work / ("store/sha256=" + digest.substr(7) + "/signature-" + std::to_string(slot)), sig);
    return digest;
  };
  push_and_sign(2);  // not in slot 1: the builder must keep looking

  testing::ServiceProcess builder(
      "graph-builder", {"--releases", (example / "releases").string(), "--graph-data-image", image,
                        "--graph-data-public-keys", signer.keys(), "--graph-data-signatures", (work / "store").string(),
                        "--graph-data-cache", (work / "cache").string(), "--service.pause_secs", "1"});
  ASSERT_TRUE(testing::WaitFor([&] { return testing::Get(builder.url("/readiness", "status")).status == 200; }))
      << builder.log();

  // The same graph as from the directory itself.
  auto expected = testing::BuildLocal(example / "releases", example / "graph-data");
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(testing::Get(builder.url("/graph")).body, WriteServedGraphJson(*expected));

  auto tarball = testing::Get(builder.url("/graph-data", "public"));
  ASSERT_EQ(tarball.status, 200) << tarball.body;
  EXPECT_EQ(tarball.headers["Content-Type"], "application/gzip");
  auto version = registry::ReadFileFromLayer(tarball.body, "version");
  ASSERT_TRUE(version.ok() && version->has_value());
  EXPECT_EQ(**version, "1.1.0\n");

  // A new revision under the same tag, signed: the graph follows it.
  testing::WriteFile(work / "gd/channels/stable-4.13.yaml", "name: stable-4.13\nversions: [4.13.0]\n");
  push_and_sign(1);
  ASSERT_TRUE(testing::WaitFor([&] {
    auto g = ReadGraphJson(testing::Get(builder.url("/graph")).body);
    if (!g.ok()) return false;
    auto n = g->Find("4.13.1+amd64");
    return n && g->node(*n).metadata.count("io.openshift.upgrades.graph.release.channels") &&
           g->node(*n).metadata.at("io.openshift.upgrades.graph.release.channels").find("stable-4.13") == std::string::npos;
  })) << builder.log();

  // Signed by a key nobody trusts: the refresh fails and nothing becomes ready.
  testing::ServiceProcess untrusted(
      "graph-builder", {"--releases", (example / "releases").string(), "--graph-data-image", image,
                        "--graph-data-public-keys", stranger.keys(), "--graph-data-signatures",
                        (work / "store").string(), "--graph-data-cache", (work / "cache2").string(),
                        "--service.pause_secs", "1"});
  ASSERT_TRUE(testing::WaitFor([&] { return untrusted.log().find("not signed with a trusted key") != std::string::npos; }))
      << untrusted.log();
  EXPECT_EQ(testing::Get(untrusted.url("/readiness", "status")).status, 503);
  EXPECT_EQ(builder.Stop(), 0);
}

// A graph-data tree with an empty blocked-edges/ (no edge blocked yet): `graph-data
// push` keeps the directory in the image, so the graph builder reads the image as it
// reads the tree, and graph-data.tar.gz keeps the directory too.
TEST(GraphDataImageTest, EmptyBlockedEdgesDirectorySurvivesPush) {
  testing::LocalRegistry registry;
  ASSERT_TRUE(registry.ready()) << registry.log();
  const fs::path example = testing::Examples() / "ocp-4x";
  const std::string image = registry.url() + "/ota/graph-data:empty-blocked-edges";
  testing::TempDir work;
  fs::copy(example / "graph-data", work / "gd", fs::copy_options::recursive);
  for (const auto& entry : fs::directory_iterator(work / "gd/blocked-edges")) fs::remove(entry.path());
  fs::remove_all(work / "gd/hotfixes");  // optional: absent stays absent
  auto pushed = testing::RunCincinnati("graph-data push " + (work / "gd").string() + " --to " + image);
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;

  testing::ServiceProcess builder("graph-builder", {"--releases", (example / "releases").string(),
                                                    "--graph-data-image", image, "--graph-data-cache",
                                                    (work / "cache").string(), "--service.pause_secs", "1"});
  ASSERT_TRUE(testing::WaitFor([&] { return testing::Get(builder.url("/readiness", "status")).status == 200; }))
      << builder.log();
  auto expected = testing::BuildLocal(example / "releases", work / "gd");
  ASSERT_TRUE(expected.ok()) << expected.status().message();
  EXPECT_EQ(testing::Get(builder.url("/graph")).body, WriteServedGraphJson(*expected));

  auto tarball = testing::Get(builder.url("/graph-data", "public"));
  ASSERT_EQ(tarball.status, 200) << tarball.body;
  std::vector<std::string> directories;
  ASSERT_TRUE(registry::ExtractLayer(tarball.body, (work / "served").string(), [&](const std::string& path, bool dir) {
                if (dir) directories.push_back(path);
                return true;
              }).ok());
  EXPECT_EQ(directories, (std::vector<std::string>{"blocked-edges", "channels", "raw"}));
  EXPECT_TRUE(fs::is_directory(work / "served/blocked-edges"));
  EXPECT_TRUE(fs::is_empty(work / "served/blocked-edges"));
  EXPECT_FALSE(fs::exists(work / "served/hotfixes"));
  EXPECT_EQ(builder.Stop(), 0);
}

}  // namespace
}  // namespace cincinnati

namespace cincinnati {
namespace {

TEST(MirrorTest, ChannelMirrorKeepsDigestsAndTheGraph) {
  testing::LocalRegistry a, b;
  ASSERT_TRUE(a.ready() && b.ready());
  const fs::path graph_data = testing::Examples() / "ocp-4x" / "graph-data";
  struct R {
    const char* version;
    const char* previous;
    const char* arch;
  };
  for (const R& r : {R{"4.12.0", "", "amd64"}, R{"4.12.3", "", "amd64"}, R{"4.12.4", "4.12.3", "amd64"},
                     R{"4.13.0", "4.12.3,4.12.4", "amd64"}, R{"4.13.1", "4.12.4,4.13.0", "amd64"},
                     R{"4.13.0", "4.12.4", "arm64"}}) {
    std::string args = std::string("release new --version ") + r.version + " --arch " + r.arch +
                       (*r.previous ? std::string(" --previous ") + r.previous : std::string()) + " --to " + a.url() +
                       "/ocp/release:" + r.version + "-" + r.arch;
    auto pushed = testing::RunCincinnati(args);
    ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  }
  auto mirrored = testing::RunCincinnati("release mirror --from " + a.url() + "/ocp/release --to " + b.url() +
                                         "/mirror/release --channel stable-4.13 --graph-data " + graph_data.string());
  ASSERT_EQ(mirrored.exit_code, 0) << mirrored.err;
  EXPECT_NE(mirrored.err.find("mirrored 5 of 6 tags"), std::string::npos) << mirrored.err;  // 4.12.0 is not in it

  auto scrape = [&](const std::string& url, const std::string& repo) {
    LocalBuildOptions options;
    RegistrySourceSettings s;
    s.registry = url;
    s.repository = repo;
    options.registry = s;
    options.graph_data = graph_data;
    TransformContext context;
    auto g = BuildLocalGraph(options, context);
    EXPECT_TRUE(g.ok()) << g.status().message();
    return g.ok() ? std::move(g).value() : Graph();
  };
  Graph on_a = scrape(a.url(), "ocp/release");
  Graph on_b = scrape(b.url(), "mirror/release");
  ASSERT_EQ(on_b.node_count() + 1, on_a.node_count());  // all but 4.12.0
  for (const Node& n : on_b.nodes()) {
    if (!n.concrete) continue;
    auto in_a = on_a.Find(n.version);
    ASSERT_TRUE(in_a.has_value()) << n.version;
    const Node& original = on_a.node(*in_a);
    const std::string digest = n.metadata.at("io.openshift.upgrades.graph.release.manifestref");
    EXPECT_EQ(digest, original.metadata.at("io.openshift.upgrades.graph.release.manifestref")) << n.version;
    EXPECT_EQ(n.payload, b.host_port() + "/mirror/release@" + digest);
    EXPECT_EQ(n.metadata, original.metadata) << n.version;
  }
  // Same edges among the mirrored releases.
  std::set<std::string> edges_a, edges_b;
  for (const Edge& e : on_a.Edges()) {
    if (on_b.Find(on_a.node(e.from).version) && on_b.Find(on_a.node(e.to).version)) {
      edges_a.insert(on_a.node(e.from).version + "->" + on_a.node(e.to).version);
    }
  }
  for (const Edge& e : on_b.Edges()) edges_b.insert(on_b.node(e.from).version + "->" + on_b.node(e.to).version);
  EXPECT_EQ(edges_b, edges_a);
  EXPECT_FALSE(on_b.Find("4.12.0+amd64").has_value());
}

}  // namespace
}  // namespace cincinnati
