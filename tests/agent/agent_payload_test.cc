// Release payloads, read as the CVO reads them: YAML manifests as JSON, templating, inclusion,
// the update order, and payloads pulled by digest from a real registry (through a
// proxy that corrupts blobs, and a server that answers with another manifest).
#include <gtest/gtest.h>

#include <functional>

#include "agent/manifests.h"
#include "agent/payload.h"
#include "agent/release_verifier.h"
#include "fault_proxy.h"
#include "full_disk.h"
#include "gpg_util.h"
#include "kube/yaml_json.h"
#include "registry/reference.h"
#include "registry_util.h"
#include "http_server/http_server.h"
#include "test_util.h"

namespace cincinnati::agent {

using kube::WriteJson;
using kube::FindMember;
using kube::TextOf;
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::TempDir;
using testing::WriteFile;

constexpr char kInclude[] = "include.release.openshift.io/self-managed-high-availability";

std::string Operator(const std::string& name, const std::string& extra_annotations = "") {
  return "apiVersion: config.openshift.io/v1\nkind: ClusterOperator\nmetadata:\n  name: " + name +
         "\n  annotations:\n    " + kInclude + ": \"true\"\n" + extra_annotations;
}

TEST(ManifestYamlTest, ScalarsReadAsTheCoreSchemaSays) {
  auto v = kube::YamlToJson("a: 1\nb: -2.5\nc: true\nd: ~\ne: \"1\"\nf: 0x1f\ng: text\nh: [1, 'x']\ni: 1e3\nj: .inf\n", "test");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(WriteJson(*v), R"({"a":1,"b":-2.5,"c":true,"d":null,"e":"1","f":31,"g":"text","h":[1,"x"],"i":1000,"j":".inf"})");
  auto bad = kube::YamlToJson("a: [1\n", "file.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("file.yaml"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(kube::YamlToJson("a: 1\na: 2\n", "dup").ok());
}

class PayloadDir : public ::testing::Test {
 protected:
  void Put(const std::string& path, const std::string& text) { WriteFile(dir_ / path, text); }
  ManifestContext Context() {
    ManifestContext c;
    c.release_image = "quay.io/ocp/release@sha256:" + std::string(64, '1');
    c.images = {{"ingress-operator", "quay.io/ocp/ingress@sha256:" + std::string(64, '2')}};
    c.major_version = 4;
    return c;
  }
  TempDir dir_;
};

TEST_F(PayloadDir, LoadsInOrderTemplatesAndNamesTheFile) {
  Put("manifests/0000_50_ingress_01-operator.yaml",
      Operator("ingress") + "spec:\n  image: '{{index .Images \"ingress-operator\"}}'\n  release: {{ .ReleaseImage }}\n---\n" +
          Operator("ingress-extra") + "---\n");
  Put("manifests/0000_00_cluster-version-operator_01.yaml", Operator("version"));
  Put("manifests/README.md", "not a manifest");
  Put("release-manifests/0000_10_config_01.json",
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"}})");
  Put("release-manifests/release-metadata", "{}");
  Put("release-manifests/image-references", "{}");
  auto loaded = LoadManifests(dir_.path().string(), Context());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->size(), 4u);
  EXPECT_EQ((*loaded)[0].Describe(), "ClusterOperator version (manifests/0000_00_cluster-version-operator_01.yaml#0)");
  EXPECT_EQ((*loaded)[0].component, "cluster-version-operator");
  EXPECT_EQ((*loaded)[0].run_level, "00");
  EXPECT_EQ((*loaded)[1].name, "ingress");
  EXPECT_EQ(TextOf(*FindMember(*FindMember((*loaded)[1].object, "spec"), "image")), Context().images["ingress-operator"]);
  EXPECT_EQ(TextOf(*FindMember(*FindMember((*loaded)[1].object, "spec"), "release")), Context().release_image);
  EXPECT_EQ((*loaded)[2].name, "ingress-extra");
  EXPECT_EQ((*loaded)[2].document, 1u);
  EXPECT_EQ((*loaded)[3].Describe(), "ConfigMap ns/c (release-manifests/0000_10_config_01.json#0)");

  struct Case {
    std::string file, text, error;
  };
  std::vector<Case> cases = {
      {"manifests/0000_60_x_01.yaml", "a: {{ .Env }}\n", "manifests/0000_60_x_01.yaml: unsupported template action {{.Env}}"},
      {"manifests/0000_60_x_01.yaml", "a: {{index .Images \"nope\"}}\n", "image \"nope\" is not in image-references"},
      {"manifests/0000_60_x_01.yaml", "- 1\n", "manifests/0000_60_x_01.yaml#0: a manifest must be an object"},
      {"release-manifests/0000_60_x_01.yaml", "kind: ConfigMap\nmetadata: {}\n", "#0: metadata.name is required"},
      {"release-manifests/0000_60_x_01.yaml", "kind: [\n", "release-manifests/0000_60_x_01.yaml"},
  };
  for (const auto& c : cases) {
    TempDir other;
    WriteFile(other / c.file, c.text);
    fs::create_directories(other / "manifests");
    fs::create_directories(other / "release-manifests");
    auto got = LoadManifests(other.path().string(), Context());
    ASSERT_FALSE(got.ok()) << c.text;
    EXPECT_NE(got.status().message().find(c.error), std::string::npos) << got.status().message();
  }
}

TEST_F(PayloadDir, InclusionFollowsTheAnnotations) {
  Manifest m;
  auto with = [&](const std::string& annotations) {
    m.object = kube::YamlToJson("kind: X\nmetadata:\n  name: x\n  annotations:\n" + annotations, "t").value();
    return ExclusionReason(m, Context());
  };
  EXPECT_EQ(with(std::string("    ") + kInclude + ": \"true\"\n"), std::nullopt);
  EXPECT_NE(with("    include.release.openshift.io/single-node-developer: \"true\"\n"), std::nullopt);
  EXPECT_NE(with(std::string("    ") + kInclude + ": \"false\"\n"), std::nullopt);
  const std::string included = std::string("    ") + kInclude + ": \"true\"\n";
  EXPECT_NE(with(included + "    release.openshift.io/feature-set: TechPreviewNoUpgrade\n"), std::nullopt);
  EXPECT_EQ(with(included + "    release.openshift.io/feature-set: Default,TechPreviewNoUpgrade\n"), std::nullopt);
  EXPECT_NE(with(included + "    release.openshift.io/major-version: \"5\"\n"), std::nullopt);
  EXPECT_EQ(with(included + "    release.openshift.io/major-version: 3,4\n"), std::nullopt);
  ManifestContext hosted = Context();
  hosted.exclude_id = "internal-openshift-hosted";
  m.object = kube::YamlToJson("kind: X\nmetadata:\n  name: x\n  annotations:\n" + included +
                            "    exclude.release.openshift.io/internal-openshift-hosted: \"true\"\n",
                        "t")
                 .value();
  EXPECT_EQ(ExclusionReason(m, hosted), "excluded for internal-openshift-hosted");
  EXPECT_EQ(ExclusionReason(m, Context()), std::nullopt);
}

TEST(PlanUpdateTest, RunLevelsInOrderComponentsTogetherJobsAlone) {
  auto make = [](std::string file, std::string kind = "ConfigMap", std::string api = "v1") {
    Manifest m;
    m.file = "manifests/" + file;
    m.kind = kind;
    m.api_version = api;
    std::string run_level, component;
    if (file.rfind("0000_", 0) == 0) {
      run_level = file.substr(5, 2);
      size_t end = file.find('_', 8);
      component = file.substr(8, end - 8);
    }
    m.run_level = run_level;
    m.component = component;
    return m;
  };
  std::vector<Manifest> ms = {
      make("0000_00_cluster-version-operator_01.yaml"), make("0000_00_cluster-version-operator_02.yaml"),
      make("0000_10_a_01.yaml"),  make("0000_10_a_02.yaml"),  make("0000_10_b_01.yaml"),
      make("0000_10_c_01.yaml"),  make("0000_20_migrate_01.yaml", "Job", "batch/v1"),
      make("0000_20_d_01.yaml"),  make("0000_30_e_01.yaml"),  make("zz-extra.yaml"),
  };
  std::vector<bool> included(ms.size(), true);
  included[5] = false;  // component c is excluded
  auto groups = PlanUpdate(ms, included);
  std::vector<std::string> got;
  for (const auto& g : groups) {
    std::string line = g.run_level + ":";
    for (const auto& [component, files] : g.components) {
      line += " " + component + "[";
      for (size_t i : files) line += std::to_string(i);
      line += "]";
    }
    got.push_back(line);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"00: cluster-version-operator[01]", "10: a[23] b[4]", "20: migrate[6]",
                                           "20: d[7]", "30: e[8]", ": manifests/zz-extra.yaml[9]"}));
}

// A registry whose every manifest answer is the same document, whatever digest is asked.
class LyingRegistry {
 public:
  explicit LyingRegistry(std::string manifest) : manifest_(std::move(manifest)) {
    server_ = std::make_unique<http_server::HttpServer>(http_server::ServerLimits{.threads = 1});
    port_ = *server_->Listen("127.0.0.1", 0, [this](const http_server::Request& r) {
      if (r.path == "/v2/") return http_server::Response::Text(200, "{}", "application/json");
      return http_server::Response::Text(200, manifest_, "application/vnd.docker.distribution.manifest.v2+json");
    });
    server_->Start();
  }
  ~LyingRegistry() { server_->Shutdown(1s); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string manifest_;
  std::unique_ptr<http_server::HttpServer> server_;
  int port_ = 0;
};

registry::RegistryClient ClientFor(const std::string& pullspec) {
  auto ref = registry::ParseImageReference(pullspec);
  EXPECT_TRUE(ref.ok()) << pullspec;
  return registry::RegistryClient(ref->location);
}

TEST(PayloadDownloadTest, PullsByDigestReadsTheLayoutAndRefusesTampering) {
  testing::Signer key("release");
  ASSERT_TRUE(key.ok());
  testing::LocalRegistry registry;
  ASSERT_TRUE(registry.ready()) << registry.log();
  TempDir manifests;
  WriteFile(manifests / "0000_00_cluster-version-operator_01.yaml", Operator("version"));
  WriteFile(manifests / "0000_50_ingress_01.yaml", Operator("ingress") + "spec:\n  release: '{{.ReleaseImage}}'\n");
  auto pushed = testing::RunCincinnati("release new --version 4.1.1 --previous 4.1.0 --payload-manifests " +
                                       manifests.path().string() + " --verification-keys " + key.keys() +
                                       " --verification-stores https://mirror.example.com/sigs --to " + registry.url() +
                                       "/ocp/release:4.1.1");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  const std::string pullspec = registry.url() + "/ocp/release@" + pushed.out.substr(pushed.out.find("@") + 1, 71);

  TempDir state;
  auto client = ClientFor(pullspec);
  auto dir = DownloadPayload(client, pullspec, (state / "updatepayloads").string());
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_EQ(fs::path(*dir).filename().string(), PayloadDirectoryName(pullspec));
  auto info = ReadPayload(*dir);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->metadata.version.ToString(), "4.1.1");
  ASSERT_EQ(info->metadata.previous.size(), 1u);
  EXPECT_EQ(info->metadata.previous[0].ToString(), "4.1.0");

  ManifestContext context;
  context.release_image = pullspec;
  context.major_version = 4;
  auto loaded = LoadManifests(*dir, context);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->size(), 3u);
  EXPECT_EQ(TextOf(*FindMember(*FindMember((*loaded)[1].object, "spec"), "release")), pullspec);
  ASSERT_TRUE(IsVerificationConfigMap((*loaded)[2].object)) << (*loaded)[2].Describe();
  auto verification = ReadVerificationConfigMap((*loaded)[2].object);
  ASSERT_TRUE(verification.ok()) << verification.status().message();
  EXPECT_EQ(verification->stores, std::vector<std::string>{"https://mirror.example.com/sigs"});
  EXPECT_EQ(verification->keyrings.size(), 1u);

  // Already complete: reused without the registry; a partial left by a crash is removed.
  fs::create_directories(state / "updatepayloads" / ".partial-leftover-1");
  registry.Stop();
  auto again = DownloadPayload(client, pullspec, (state / "updatepayloads").string());
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, *dir);
  EXPECT_TRUE(fs::exists(state / "updatepayloads" / ".partial-leftover-1")) << "a reuse touches nothing";

  // The registry is down for a payload not pulled yet: an error naming the pull spec,
  // and no partial directory is left behind.
  const std::string other = registry.url() + "/ocp/release@sha256:" + std::string(64, 'e');
  auto down = DownloadPayload(client, other, (state / "updatepayloads").string());
  ASSERT_FALSE(down.ok());
  EXPECT_NE(down.status().message().find(other), std::string::npos) << down.status().message();
  for (const auto& entry : fs::directory_iterator(state / "updatepayloads")) {
    EXPECT_EQ(entry.path().filename().string().rfind(".partial-", 0), std::string::npos) << entry.path();
  }
  EXPECT_FALSE(DownloadPayload(client, registry.url() + "/ocp/release:4.1.1", (state / "x").string()).ok());
}

TEST(PayloadDownloadTest, TamperedBlobsAndManifestsAreRefused) {
  testing::LocalRegistry registry;
  ASSERT_TRUE(registry.ready()) << registry.log();
  auto pushed = testing::RunCincinnati("release new --version 4.1.1 --to " + registry.url() + "/ocp/release:4.1.1");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  const std::string digest = pushed.out.substr(pushed.out.find("@") + 1, 71);

  testing::FaultProxy proxy(registry.url());
  proxy.corrupt_blobs = true;
  TempDir state;
  const std::string through_proxy = proxy.url() + "/ocp/release@" + digest;
  auto client = ClientFor(through_proxy);
  auto corrupt = DownloadPayload(client, through_proxy, state.path().string());
  ASSERT_FALSE(corrupt.ok());
  EXPECT_NE(corrupt.status().message().find("does not match digest"), std::string::npos) << corrupt.status().message();

  // The connection is cut in the middle of a blob (the registry goes away mid-pull):
  // an error, nothing left behind; once the registry answers again, the pull succeeds.
  proxy.corrupt_blobs = false;
  proxy.truncate_blobs = true;
  auto cut = DownloadPayload(client, through_proxy, state.path().string());
  ASSERT_FALSE(cut.ok());
  EXPECT_TRUE(fs::is_empty(state.path())) << "no partial payload is left";
  proxy.truncate_blobs = false;
  auto whole = DownloadPayload(client, through_proxy, state.path().string());
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_TRUE(ReadPayload(*whole).ok());
  fs::remove_all(*whole);

  // Another image's manifest under the digest asked for.
  auto manifest = testing::Get(registry.url() + "/v2/ocp/release/manifests/" + digest);
  ASSERT_EQ(manifest.status, 200);
  LyingRegistry liar(manifest.body + " ");
  const std::string lied = liar.url() + "/ocp/release@" + digest;
  auto liar_client = ClientFor(lied);
  auto substituted = DownloadPayload(liar_client, lied, state.path().string());
  ASSERT_FALSE(substituted.ok());
  EXPECT_NE(substituted.status().message().find("not the one asked for"), std::string::npos)
      << substituted.status().message();
  EXPECT_TRUE(fs::is_empty(state.path()));
}

// A full disk mid-download is NoSpace and leaves nothing that looks complete; a payload
// cut or changed on disk after its download (a lost write, an older agent that kept a
// cut file) is found before use and fetched again, never used as it is.
TEST(PayloadDownloadTest, AFullDiskIsSaidAndAPayloadChangedOnDiskIsFetchedAgain) {
  testing::LocalRegistry registry;
  ASSERT_TRUE(registry.ready()) << registry.log();
  TempDir manifests;
  WriteFile(manifests / "0000_50_ingress_01-operator.yaml", Operator("ingress") + "spec: {padding: '" + std::string(4000, 'p') + "'}\n");
  auto pushed = testing::RunCincinnati("release new --version 4.1.1 --payload-manifests " + manifests.path().string() +
                                       " --to " + registry.url() + "/ocp/release:4.1.1");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  const std::string pullspec = registry.url() + "/ocp/release@" + pushed.out.substr(pushed.out.find("@") + 1, 71);
  auto client = ClientFor(pullspec);
  TempDir state;
  const std::string root = (state / "updatepayloads").string();

  for (uint64_t budget : {uint64_t{0}, uint64_t{1000}, uint64_t{3000}}) {  // full before, during, near the end
    SCOPED_TRACE(budget);
    testing::FullDiskFileSystem full(budget);
    auto cut = DownloadPayload(client, pullspec, root, {}, full);
    ASSERT_FALSE(cut.ok());
    EXPECT_EQ(cut.status().code(), Status::Code::kNoSpace) << cut.status().message();
    EXPECT_NE(cut.status().message().find("No space left on device"), std::string::npos) << cut.status().message();
    EXPECT_TRUE(fs::is_empty(root)) << "nothing of a cut download is left";
  }

  auto dir = DownloadPayload(client, pullspec, root);
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_TRUE(VerifyPayloadOnDisk(*dir).ok());
  const fs::path manifest = fs::path(*dir) / "manifests" / "0000_50_ingress_01-operator.yaml";
  const std::string whole = testing::ReadFile(manifest);

  struct Change {
    std::string what, words;
    std::function<void()> make;
  };
  for (const Change& c : std::vector<Change>{
           {"cut", "bytes, but", [&] { fs::resize_file(manifest, 10); }},
           {"emptied", "bytes, but", [&] { fs::resize_file(manifest, 0); }},
           {"changed", "does not hold the bytes", [&] { WriteFile(manifest, std::string(whole.size(), 'x')); }},
           {"removed", "missing", [&] { fs::remove(manifest); }},
           {"added", "was not written by the download", [&] { WriteFile(fs::path(*dir) / "manifests" / "0000_90_x.yaml", "{}"); }},
           {"pulled by an older agent", "no record", [&] { fs::remove(fs::path(*dir) / kPayloadIndexFile); }},
       }) {
    SCOPED_TRACE(c.what);
    c.make();
    Status changed = VerifyPayloadOnDisk(*dir);
    ASSERT_FALSE(changed.ok());
    EXPECT_NE(changed.message().find(c.words), std::string::npos) << changed.message();
    auto again = DownloadPayload(client, pullspec, root);
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_TRUE(VerifyPayloadOnDisk(*again).ok());
    EXPECT_EQ(testing::ReadFile(manifest), whole);
  }

  // Cut, with the registry gone: an error, never the cut payload.
  fs::resize_file(manifest, 10);
  registry.Stop();
  EXPECT_FALSE(DownloadPayload(client, pullspec, root).ok());
}

TEST_F(PayloadDir, ReadPayloadChecksTheLayout) {
  auto expect_error = [&](const std::string& what) {
    auto got = ReadPayload(dir_.path().string());
    ASSERT_FALSE(got.ok()) << what;
    EXPECT_NE(got.status().message().find(what), std::string::npos) << got.status().message();
  };
  expect_error("no manifests/ directory");
  fs::create_directories(dir_ / "manifests");
  fs::create_directories(dir_ / "release-manifests");
  expect_error("no release-manifests/release-metadata");
  Put("release-manifests/release-metadata", R"({"kind":"other","version":"4.1.1"})");
  expect_error("release-manifests/release-metadata");
  Put("release-manifests/release-metadata", R"({"kind":"cincinnati-metadata-v0","version":"4.1.1"})");
  expect_error("no release-manifests/image-references");
  Put("release-manifests/image-references", R"({"kind":"ImageStream","metadata":{"name":"4.1.0"}})");
  expect_error("metadata.name must be the release's version 4.1.1");
  Put("release-manifests/image-references",
      "kind: ImageStream\nmetadata:\n  name: 4.1.1\nspec:\n  tags:\n  - name: cvo\n    from:\n      name: quay.io/cvo@sha256:1\n");
  auto ok = ReadPayload(dir_.path().string());
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->images.at("cvo"), "quay.io/cvo@sha256:1");
}

}  // namespace
}  // namespace cincinnati::agent
