#include "graph-data/lint.h"

#include <gtest/gtest.h>

#include "graph-data/graph_data.h"
#include "test_util.h"

namespace cincinnati::graphdata {
namespace {

namespace fs = std::filesystem;
using cincinnati::testing::TempDir;
using cincinnati::testing::WriteFile;

const fs::path kRevision = cincinnati::testing::FixtureGraphData();

std::string Errors(const Diagnostics& d) {
  std::string out;
  for (const auto& x : d.items()) {
    if (x.severity == Diagnostic::Severity::kError) out += x.location + ": " + x.message + "\n";
  }
  return out;
}

bool HasError(const Diagnostics& d, const std::string& file, const std::string& needle) {
  for (const auto& x : d.items()) {
    if (x.severity == Diagnostic::Severity::kError && x.location == file &&
        x.message.find(needle) != std::string::npos) {
      return true;
    }
  }
  return false;
}

TEST(RealGraphDataTest, EveryFileLoadsWithEveryErrorClassDisallowed) {
  ASSERT_TRUE(fs::is_directory(kRevision));
  Diagnostics d;
  auto data = LoadGraphData(kRevision, LoadOptions{{ErrorClass::kFile, ErrorClass::kDeserialize,
                                                    ErrorClass::kMissingExtension, ErrorClass::kInvalidExtension}},
                            d);
  ASSERT_TRUE(data.ok()) << data.status().message();
  EXPECT_EQ(data->channels.size(), 38u);
  EXPECT_EQ(data->unconditional_blocks.size() + data->conditional_blocks.size(), 217u);
  EXPECT_EQ(data->conditional_blocks.size(), 101u);
  EXPECT_EQ(data->schema_version.ToString(), "1.1.0");
}

TEST(RealGraphDataTest, CheckReportsNoError) {
  Diagnostics d = CheckGraphData(kRevision);
  EXPECT_EQ(d.Count(Diagnostic::Severity::kError), 0u) << Errors(d);
}

// Each deliberately broken copy of the real data is reported with file and reason.
class BrokenCopyTest : public ::testing::Test {
 protected:
  void SetUp() override { fs::copy(kRevision, dir_.path(), fs::copy_options::recursive); }
  fs::path root() const { return dir_.path(); }
  void Write(const std::string& rel, const std::string& text) {
    fs::remove(root() / rel);
    WriteFile(root() / rel, text);
  }
  TempDir dir_;
};

TEST_F(BrokenCopyTest, BadYaml) {
  Write("channels/stable-4.9.yaml", "name: stable-4.9\nversions: [4.9.0,\n");
  Diagnostics d = CheckGraphData(root());
  EXPECT_TRUE(HasError(d, "channels/stable-4.9.yaml", "invalid YAML at line")) << Errors(d);
  EXPECT_EQ(d.Count(Diagnostic::Severity::kError), 1u) << Errors(d);
}

TEST_F(BrokenCopyTest, BadSemver) {
  Write("channels/fast-4.8.yaml", "name: fast-4.8\nversions:\n- 4.8.0\n- 4.8.z\n");
  Write("blocked-edges/4.8.4.yaml", "to: 4.8\nfrom: .*\n");
  Diagnostics d = CheckGraphData(root());
  EXPECT_TRUE(HasError(d, "channels/fast-4.8.yaml", "'4.8.z'")) << Errors(d);
  EXPECT_TRUE(HasError(d, "blocked-edges/4.8.4.yaml", "'to'")) << Errors(d);
}

TEST_F(BrokenCopyTest, BadRegex) {
  Write("blocked-edges/4.8.4.yaml", "to: 4.8.4\nfrom: 4[.]7[.(\n");
  Write("blocked-edges/4.11.2-PodmanTermStorageCorruption.yaml",
        "to: 4.11.2\nfrom: (\nurl: https://issues.redhat.com/browse/OCPBUGS-631\nname: PodmanTermStorageCorruption\n"
        "message: m\nmatchingRules:\n- type: Always\n");
  Diagnostics d = CheckGraphData(root());
  EXPECT_TRUE(HasError(d, "blocked-edges/4.8.4.yaml", "invalid regex '4[.]7[.('")) << Errors(d);
  EXPECT_TRUE(HasError(d, "blocked-edges/4.11.2-PodmanTermStorageCorruption.yaml", "invalid regex '('")) << Errors(d);
}

TEST_F(BrokenCopyTest, UnknownMajorVersion) {
  Write("version", "3.0.0\n");
  Diagnostics d = CheckGraphData(root());
  EXPECT_TRUE(HasError(d, "version", "unrecognized graph-data version 3.0.0")) << Errors(d);
}

TEST_F(BrokenCopyTest, ChannelWithoutDash) {
  Write("channels/stable.yaml", "name: stable\nversions: [4.9.0]\n");
  Diagnostics d = CheckGraphData(root());
  EXPECT_TRUE(HasError(d, "channels/stable.yaml", "has no '-'")) << Errors(d);
}

TEST_F(BrokenCopyTest, ChannelWithComma) {
  // Nodes list their channels comma-separated: this name would read back as two channels.
  Write("channels/stable-4.9,fast-4.9.yaml", "name: stable-4.9,fast-4.9\nversions: [4.9.0]\n");
  Diagnostics d = CheckGraphData(root());
  EXPECT_TRUE(HasError(d, "channels/stable-4.9,fast-4.9.yaml", "contains ','")) << Errors(d);
}

TEST_F(BrokenCopyTest, RawMetadataCannotSetReservedKeys) {
  Write("raw/metadata.json",
        R"({"4.9.0": {"url": "https://errata", "io.openshift.upgrades.graph.phased.start": "soon"}})");
  Diagnostics d = CheckGraphData(root());
  EXPECT_TRUE(HasError(d, "raw/metadata.json", "'4.9.0': key 'io.openshift.upgrades.graph.phased.start' is reserved"))
      << Errors(d);
  EXPECT_EQ(d.Count(Diagnostic::Severity::kError), 1u) << Errors(d);
}

TEST_F(BrokenCopyTest, ExtensionsRiskRulesAndDuplicates) {
  Write("channels/notes.txt", "x");
  Write("channels/stable-4.99.yml", "name: stable-4.99\nversions: []\n");
  Write("channels/copy-of-stable-4.9.yaml", "name: stable-4.9\nversions: []\n");
  Write("blocked-edges/4.11.2-PodmanTermStorageCorruption.yaml",
        "to: 4.11.2\nfrom: .*\nurl: http://insecure\nname: podman\nmessage: m\nmatchingRules:\n"
        "- type: Always\n  extra: 1\n- type: Always\n");
  Write("blocked-edges/4.9.7.yaml", "to: 4.9.7\nfrom: .*\nurl: https://x\n");
  Diagnostics d = CheckGraphData(root());
  EXPECT_TRUE(HasError(d, "channels/notes.txt", "invalid_extension")) << Errors(d);
  EXPECT_TRUE(HasError(d, "channels/stable-4.99.yml", "invalid_extension")) << Errors(d);
  EXPECT_TRUE(HasError(d, "channels/stable-4.9.yaml", "also defined in channels/copy-of-stable-4.9.yaml") ||
              HasError(d, "channels/copy-of-stable-4.9.yaml", "also defined"))
      << Errors(d);
  const std::string risk = "blocked-edges/4.11.2-PodmanTermStorageCorruption.yaml";
  EXPECT_TRUE(HasError(d, risk, "https://")) << Errors(d);
  EXPECT_TRUE(HasError(d, risk, "name 'podman'")) << Errors(d);
  EXPECT_TRUE(HasError(d, risk, "unexpected key 'extra'")) << Errors(d);
  EXPECT_TRUE(HasError(d, risk, "more than once")) << Errors(d);
  EXPECT_TRUE(HasError(d, "blocked-edges/4.9.7.yaml", "unknown key 'url'")) << Errors(d);
}

TEST_F(BrokenCopyTest, InconsistentRiskDefinitions) {
  // Two files with the same risk name must agree on url, message and rules.
  Write("blocked-edges/4.11.3-PodmanTermStorageCorruption.yaml",
        "to: 4.11.3\nfrom: .*\nurl: https://issues.redhat.com/browse/OTHER\nname: PodmanTermStorageCorruption\n"
        "message: m\nmatchingRules:\n- type: Always\n");
  Diagnostics d = CheckGraphData(root());
  EXPECT_TRUE(HasError(d, "blocked-edges/4.11.3-PodmanTermStorageCorruption.yaml", "differs from its definition"))
      << Errors(d);
}

}  // namespace
}  // namespace cincinnati::graphdata
