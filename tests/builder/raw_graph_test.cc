#include "builder/raw_graph.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "builder/release_sources.h"
#include "core/graph_json.h"
#include "test_util.h"

namespace cincinnati {
namespace {

using testing::EdgeStrings;
using testing::TempDir;
using testing::WriteFile;

Release R(const char* version, const char* arch, const char* digest, std::vector<const char*> previous = {},
          std::vector<const char*> next = {}) {
  ReleaseMetadata doc;
  doc.version = Version::Parse(version).value();
  for (const char* p : previous) doc.previous.push_back(Version::Parse(p).value());
  for (const char* n : next) doc.next.push_back(Version::Parse(n).value());
  return MakeRelease(doc, arch, digest, std::string("quay.io/ocp@") + digest);
}

// A small worked example (registry part): three amd64 releases, and an s390x one whose
// previous release is absent.
TEST(RawGraphTest, BuildsNodesEdgesAndPlaceholders) {
  auto g = BuildRawGraph({R("4.1.0", "amd64", "sha256:aaaa"), R("4.1.1", "amd64", "sha256:bbbb", {"4.1.0"}),
                          R("4.2.0", "amd64", "sha256:cccc", {"4.1.0", "4.1.1"}),
                          R("4.1.1", "s390x", "sha256:dddd", {"4.1.0"})});
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->node_count(), 5u);
  EXPECT_EQ(g->node(3).version, "4.1.1+s390x");
  EXPECT_EQ(g->node(4).version, "4.1.0+s390x");
  EXPECT_FALSE(g->node(4).concrete);
  const Node& n = g->node(*g->Find("4.2.0+amd64"));
  EXPECT_EQ(n.payload, "quay.io/ocp@sha256:cccc");
  EXPECT_EQ(n.metadata.at("io.openshift.upgrades.graph.release.manifestref"), "sha256:cccc");
  EXPECT_EQ(n.metadata.at("io.openshift.upgrades.graph.release.arch"), "amd64");
  EXPECT_EQ(EdgeStrings(*g), (std::vector<std::string>{"4.1.0+amd64->4.1.1+amd64", "4.1.0+amd64->4.2.0+amd64",
                                                       "4.1.0+s390x->4.1.1+s390x", "4.1.1+amd64->4.2.0+amd64"}));
}

TEST(RawGraphTest, BuildMetadataIsReplacedByArch) {
  auto g = BuildRawGraph({R("4.12.0-rc.0+foo", "multi", "sha256:1", {}, {"4.12.0-rc.1"})});
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->Find("4.12.0-rc.0+multi").has_value());
  EXPECT_TRUE(g->Find("4.12.0-rc.1+multi").has_value());
}

TEST(RawGraphTest, SameDigestDeduplicatesDifferentDigestFails) {
  auto same = BuildRawGraph({R("1.0.0", "amd64", "sha256:1"), R("1.0.0", "amd64", "sha256:1")});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->node_count(), 1u);
  auto clash = BuildRawGraph({R("1.0.0", "amd64", "sha256:1"), R("1.0.0", "amd64", "sha256:2")});
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.status().message().find("mismatched manifest ref for concrete release 1.0.0+amd64"),
            std::string::npos);
  // A release replaces an earlier placeholder for its version.
  auto filled = BuildRawGraph({R("1.1.0", "amd64", "sha256:2", {"1.0.0"}), R("1.0.0", "amd64", "sha256:1")});
  ASSERT_TRUE(filled.ok());
  EXPECT_TRUE(filled->node(*filled->Find("1.0.0+amd64")).concrete);
}

TEST(RawGraphTest, CyclicMetadataFails) {
  // Upstream network test "test-cyclic": 0.0.2 lists 0.0.1 as previous and next.
  auto g = BuildRawGraph({R("0.0.1", "amd64", "sha256:1"), R("0.0.2", "amd64", "sha256:2", {"0.0.1"}, {"0.0.1"})});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), Status::Code::kCycle);
  EXPECT_NE(g.status().message().find("0.0.1+amd64 -> 0.0.2+amd64 -> 0.0.1+amd64"), std::string::npos)
      << g.status().message();
  EXPECT_EQ(BuildRawGraph({R("1.0.0", "amd64", "sha256:1", {"1.0.0"})}).status().code(), Status::Code::kCycle);
}

TEST(ReleaseDirectoryTest, ReadsDocumentsAndUnpackedPayloads) {
  TempDir dir;
  WriteFile(dir / "a.json", R"({"kind":"cincinnati-metadata-v0","version":"1.1.0","previous":["1.0.0"]})");
  WriteFile(dir / "b.json", R"({"kind":"cincinnati-metadata-v0","version":"1.1.0+arm64","previous":["1.0.0"],
    "payload":"quay.io/x/y@sha256:0123"})");
  WriteFile(dir / "rel-1.0.0/release-manifests/release-metadata",
            R"({"kind":"cincinnati-metadata-v0","version":"1.0.0","metadata":{"url":"u"}})");
  WriteFile(dir / "README.md", "not a release");
  TransformContext ctx;
  auto g = LoadReleases(dir.path(), {}, ctx);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(EdgeStrings(*g), (std::vector<std::string>{"1.0.0+amd64->1.1.0+amd64", "1.0.0+arm64->1.1.0+arm64"}));
  const Node& arm = g->node(*g->Find("1.1.0+arm64"));
  EXPECT_EQ(arm.payload, "quay.io/x/y@sha256:0123");
  EXPECT_EQ(arm.metadata.at("io.openshift.upgrades.graph.release.manifestref"), "sha256:0123");
  const Node& amd = g->node(*g->Find("1.0.0+amd64"));
  EXPECT_EQ(amd.metadata.at("url"), "u");
  EXPECT_EQ(amd.payload.rfind("localhost/openshift/release@sha256:", 0), 0u) << amd.payload;
  EXPECT_EQ(amd.payload.size(), std::string("localhost/openshift/release@sha256:").size() + 64);
}

TEST(ReleaseDirectoryTest, BadDocumentIsNamed) {
  TempDir dir;
  WriteFile(dir / "bad.json", R"({"kind":"cincinnati-metadata-v0","version":"1.1"})");
  TransformContext ctx;
  auto g = LoadReleases(dir.path(), {}, ctx);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("bad.json"), std::string::npos);
  EXPECT_NE(g.status().message().find("'1.1'"), std::string::npos);
  EXPECT_FALSE(LoadReleases(dir / "missing.json", {}, ctx).ok());
}

// A directory large enough to be read on several threads (as many as the CPUs allow)
// reads as one thread would: every release, in version order, and of several bad
// documents the first in path order is the one named.
TEST(ReleaseDirectoryTest, ALargeDirectoryReadsAsOneThreadWould) {
  TempDir dir;
  const size_t count = kMinDocumentsPerLoader * kMaxReleaseLoaders + 3;
  auto name = [](size_t i) { return fmt::format("r-{:04}.json", i); };
  for (size_t i = 0; i < count; ++i) {
    // Names in the reverse of version order, so the result's order is the sort's.
    const size_t v = count - 1 - i;
    WriteFile(dir / name(i), fmt::format(R"({{"kind":"cincinnati-metadata-v0","version":"1.0.{}"{}}})", v,
                                         v == 0 ? "" : fmt::format(R"(,"previous":["1.0.{}"])", v - 1)));
  }
  auto releases = LoadReleaseDirectory(dir.path(), {});
  ASSERT_TRUE(releases.ok()) << releases.status().message();
  ASSERT_EQ(releases->size(), count);
  for (size_t v = 0; v < count; ++v) EXPECT_EQ((*releases)[v].version.ToString(), fmt::format("1.0.{}+amd64", v));
  for (size_t bad : {count - 2, count / 2 + 1, count / 4}) {
    WriteFile(dir / name(bad), R"({"kind":"cincinnati-metadata-v0","version":"1.1"})");
  }
  auto failed = LoadReleaseDirectory(dir.path(), {});
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find(name(count / 4)), std::string::npos) << failed.status().message();
}

}  // namespace
}  // namespace cincinnati
