#include <gtest/gtest.h>

#include "core/graph_json.h"
#include "graph-data/channel_sort.h"
#include "graph-data/documents.h"
#include "graph-data/file_reader.h"
#include "graph-data/graph_data.h"
#include "graph-data/secondary_metadata.h"
#include "graph-data/yaml_scalar.h"
#include "test_util.h"

namespace cincinnati::graphdata {
namespace {

namespace fs = std::filesystem;
using cincinnati::testing::TempDir;
using cincinnati::testing::WriteFile;

constexpr char kChannels[] = "io.openshift.upgrades.graph.release.channels";
constexpr char kRemoveRegex[] = "io.openshift.upgrades.graph.previous.remove_regex";

TEST(FileReaderTest, ExtensionFollowsRustPathSemantics) {
  EXPECT_EQ(FileExtension("a.yaml"), "yaml");
  EXPECT_EQ(FileExtension("a.b.yml"), "yml");
  EXPECT_EQ(FileExtension("foo."), "");
  EXPECT_FALSE(FileExtension("_OWNERS").has_value());
  EXPECT_FALSE(FileExtension(".hidden").has_value());
  EXPECT_EQ(FileExtension(".hidden.yaml"), "yaml");
}

TEST(FileReaderTest, YamlExtensionIsUnanchoredYaPlusMl) {
  EXPECT_TRUE(IsYamlExtension("yaml"));
  EXPECT_TRUE(IsYamlExtension("yaaaml"));
  EXPECT_TRUE(IsYamlExtension("foo.yamlx"));
  EXPECT_TRUE(IsYamlExtension("xyaml"));
  EXPECT_FALSE(IsYamlExtension("yml"));
  EXPECT_FALSE(IsYamlExtension("json"));
  EXPECT_FALSE(IsYamlExtension(""));
}

TEST(FileReaderTest, ClassifiesProblemsAndSortsFiles) {
  TempDir dir;
  WriteFile(dir / "channels/b.yaml", "b");
  WriteFile(dir / "channels/a.yaml", "a");
  WriteFile(dir / "channels/_OWNERS", "");
  WriteFile(dir / "channels/c.yml", "");
  fs::create_directories(dir / "channels/sub.yaml");
  std::vector<FileProblem> problems;
  auto files = ReadYamlDirectory(dir.path(), "channels", &problems);
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].path, "channels/a.yaml");
  EXPECT_EQ((*files)[1].content, "b");
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].error_class, ErrorClass::kMissingExtension);
  EXPECT_EQ(problems[0].path, "channels/_OWNERS");
  EXPECT_EQ(problems[1].error_class, ErrorClass::kInvalidExtension);
  EXPECT_EQ(problems[2].error_class, ErrorClass::kFile);
  EXPECT_EQ(ReadYamlDirectory(dir.path(), "missing", &problems).status().code(), Status::Code::kNotFound);
}

TEST(YamlScalarTest, PlainScalarsResolveLikeSerdeYaml) {
  auto doc = ParseYaml("a: 4.1.10\nb: 4.1\nc: 4\nd: true\ne: '4.1'\nf: yes\ng:\nh: .*\n");
  ASSERT_TRUE(doc.ok());
  const YAML::Node& d = *doc;
  EXPECT_EQ(YamlString(d["a"]), "4.1.10");
  EXPECT_FALSE(YamlString(d["b"]).has_value());
  EXPECT_FALSE(YamlString(d["c"]).has_value());
  EXPECT_FALSE(YamlString(d["d"]).has_value());
  EXPECT_EQ(YamlString(d["e"]), "4.1");
  EXPECT_EQ(YamlString(d["f"]), "yes");
  EXPECT_FALSE(YamlString(d["g"]).has_value());
  EXPECT_EQ(YamlString(d["h"]), ".*");
  auto bad = ParseYaml("a: [1,\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line"), std::string::npos);
}

YAML::Node Yaml(const std::string& text) { return ParseYaml(text).value(); }

TEST(DocumentsTest, BlockedEdgeShapes) {
  auto u = DecodeUnconditionalBlock(Yaml("to: 4.2.0\nfrom: 4\\.1\\.20\n"));
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->to.ToString(), "4.2.0");
  EXPECT_EQ(u->from, "4\\.1\\.20");
  // Unknown keys: not an unconditional block.
  EXPECT_FALSE(DecodeUnconditionalBlock(Yaml("to: 4.2.0\nfrom: .*\nurl: x\n")).ok());
  EXPECT_FALSE(DecodeUnconditionalBlock(Yaml("_to: 4.2.0\nfrom: .*\n")).ok());
  auto bad_regex = DecodeUnconditionalBlock(Yaml("to: 4.2.0\nfrom: 4[.\n"));
  ASSERT_FALSE(bad_regex.ok());
  EXPECT_NE(bad_regex.status().message().find("invalid regex '4[.'"), std::string::npos);
  auto bad_semver = DecodeUnconditionalBlock(Yaml("to: 4.2.x\nfrom: .*\n"));
  ASSERT_FALSE(bad_semver.ok());
  EXPECT_NE(bad_semver.status().message().find("'4.2.x'"), std::string::npos);

  auto c = DecodeConditionalBlock(Yaml(
      "to: 4.11.2\nfrom: .*\nurl: https://x\nname: N\nmessage: |-\n  line\nfixedIn: 4.11.3\nmatchingRules:\n"
      "- type: PromQL\n  promql:\n    promql: up\n  extra: dropped\n- type: Always\n"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->risk.matching_rules.size(), 2u);
  EXPECT_EQ(c->risk.matching_rules[0].promql, "up");
  EXPECT_EQ(c->risk.matching_rules[1].type, MatchingRule::Type::kAlways);
  EXPECT_EQ(c->risk.message, "line");
  auto missing_url = DecodeConditionalBlock(Yaml("to: 4.11.2\nfrom: .*\nname: N\nmessage: m\nmatchingRules: []\n"));
  ASSERT_FALSE(missing_url.ok());
  EXPECT_NE(missing_url.status().message().find("'url'"), std::string::npos);
  EXPECT_FALSE(DecodeConditionalBlock(Yaml("to: 1.0.0\nfrom: .*\nurl: u\nname: N\nmessage: m\n"
                                           "matchingRules:\n- type: Sometimes\n")).ok());
}

TEST(DocumentsTest, ChannelShape) {
  auto ch = DecodeChannel(Yaml("name: stable-4.2\nfeeder: {name: fast-4.2}\nversions:\n- 4.2.0\n- 4.2.14+amd64\n"));
  ASSERT_TRUE(ch.ok());
  EXPECT_EQ(ch->name, "stable-4.2");
  EXPECT_EQ(ch->versions[1].ToString(), "4.2.14+amd64");
  auto bad = DecodeChannel(Yaml("name: stable-4.2\nversions:\n- 4.2.0\n- four\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("versions[1]"), std::string::npos);
  EXPECT_FALSE(DecodeChannel(Yaml("versions: []\n")).ok());
}

TEST(ChannelSortTest, GroupsByStreamThenName) {
  EXPECT_EQ(SortChannelList("stable-4.3,candidate-4.2,fast-4.2,stable-4.2,candidate-4.3,fast-4.3"),
            "candidate-4.2,fast-4.2,stable-4.2,candidate-4.3,fast-4.3,stable-4.3");
  EXPECT_EQ(SortChannelList("stable-4.8,eus-4.10,fast-4.8,candidate-4.8,eus-4.8"),
            "eus-4.10,candidate-4.8,eus-4.8,fast-4.8,stable-4.8");
  EXPECT_EQ(SortChannelList("a-1,a-1"), "a-1,a-1");
}

// A small graph-data tree written into a temp dir.
struct Tree {
  TempDir dir;
  Tree() {
    WriteFile(dir / "version", "1.1.0\n");
    WriteFile(dir / "raw/metadata.json", "{}");
    fs::create_directories(dir / "channels");
    fs::create_directories(dir / "blocked-edges");
  }
  fs::path root() const { return dir.path(); }
};

Result<GraphData> Load(const Tree& t, ErrorClassSet disallowed = {}) {
  Diagnostics d;
  return LoadGraphData(t.root(), LoadOptions{disallowed}, d);
}

TEST(GraphDataTest, VersionCheck) {
  Tree t;
  EXPECT_TRUE(Load(t).ok());
  WriteFile(t.dir / "version", "1.7.0");
  Diagnostics d;
  ASSERT_TRUE(LoadGraphData(t.root(), {}, d).ok());
  EXPECT_EQ(d.Count(Diagnostic::Severity::kInfo), 1u);
  WriteFile(t.dir / "version", "3.0.0");
  auto v3 = Load(t);
  ASSERT_FALSE(v3.ok());
  EXPECT_NE(v3.status().message().find("unrecognized graph-data version 3.0.0"), std::string::npos);
  WriteFile(t.dir / "version", "one");
  EXPECT_NE(Load(t).status().message().find("'one'"), std::string::npos);
  fs::remove(t.dir / "version");
  EXPECT_NE(Load(t).status().message().find("version"), std::string::npos);
}

TEST(GraphDataTest, RequiredPartsAndRawMetadata) {
  Tree t;
  WriteFile(t.dir / "raw/metadata.json", "{\"4.1.0\": {\"k\": 1}}");
  EXPECT_NE(Load(t).status().message().find("raw/metadata.json"), std::string::npos);
  WriteFile(t.dir / "raw/metadata.json", "{\"4.1.0\": {\"k\": \"v\"}, \"bogus\": {\"k\": \"v\"}}");
  Diagnostics d;
  auto data = LoadGraphData(t.root(), {}, d);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->raw_metadata.size(), 1u);
  EXPECT_EQ(d.Count(Diagnostic::Severity::kWarning), 1u);
  fs::remove_all(t.dir / "channels");
  EXPECT_NE(Load(t).status().message().find("channels/"), std::string::npos);
}

TEST(GraphDataTest, ChannelWithoutDashIsAWarning) {
  Tree t;
  WriteFile(t.dir / "channels/stable.yaml", "name: stable\nversions: []\n");
  Diagnostics d;
  auto data = LoadGraphData(t.root(), {}, d);
  ASSERT_TRUE(data.ok());
  ASSERT_EQ(d.Count(Diagnostic::Severity::kWarning), 1u);
  EXPECT_EQ(d.items()[0].location, "channels/stable.yaml");
  EXPECT_EQ(SortChannelList("beta-1,alpha,stable-0"), "alpha,stable-0,beta-1");
}

// invalid0: every error class fails the run when disallowed.
TEST(GraphDataTest, Invalid0FixtureEachDisallowedClassFails) {
  fs::path invalid0 = cincinnati::testing::Fixtures() / "secondary-metadata/invalid0/cincinnati-graph-data";
  ASSERT_TRUE(fs::is_directory(invalid0));
  for (ErrorClass c : {ErrorClass::kFile, ErrorClass::kDeserialize, ErrorClass::kMissingExtension,
                       ErrorClass::kInvalidExtension}) {
    Diagnostics d;
    EXPECT_FALSE(LoadGraphData(invalid0, LoadOptions{{c}}, d).ok()) << ErrorClassName(c);
  }
}

// The same files, with the channels/ directory it lacks: tolerated unless disallowed,
// and a disallowed class names the offending file.
TEST(GraphDataTest, Invalid0ProblemsAreToleratedUnlessDisallowed) {
  fs::path invalid0 = cincinnati::testing::Fixtures() / "secondary-metadata/invalid0/cincinnati-graph-data";
  Tree t;
  fs::copy(invalid0, t.root(), fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  fs::create_directories(t.dir / "blocked-edges/directory.yaml");  // unreadable as a file
  Diagnostics d;
  auto data = LoadGraphData(t.root(), {}, d);
  ASSERT_TRUE(data.ok()) << data.status().message();
  EXPECT_EQ(d.Count(Diagnostic::Severity::kWarning), 4u);
  struct Case {
    ErrorClass c;
    const char* file;
  };
  for (const Case& c : {Case{ErrorClass::kFile, "blocked-edges/directory.yaml"},
                        Case{ErrorClass::kDeserialize, "blocked-edges/invalid_format.yaml"},
                        Case{ErrorClass::kMissingExtension, "blocked-edges/missing_extension"},
                        Case{ErrorClass::kInvalidExtension, "blocked-edges/invalid.extension"}}) {
    Diagnostics dd;
    auto failed = LoadGraphData(t.root(), LoadOptions{{c.c}}, dd);
    ASSERT_FALSE(failed.ok()) << ErrorClassName(c.c);
    EXPECT_NE(failed.status().message().find(c.file), std::string::npos) << failed.status().message();
    EXPECT_NE(failed.status().message().find(ErrorClassName(c.c)), std::string::npos);
  }
}

TEST(GraphDataTest, BadChannelFileIsSkippedUnlessDeserializeIsDisallowed) {
  Tree t;
  WriteFile(t.dir / "channels/fast-4.2.yaml", "name: fast-4.2\nversions: [4.2.0, not-a-version]\n");
  WriteFile(t.dir / "channels/stable-4.2.yaml", "name: stable-4.2\nversions: [4.2.0]\n");
  auto data = Load(t);
  ASSERT_TRUE(data.ok());
  ASSERT_EQ(data->channels.size(), 1u);
  EXPECT_EQ(data->channels[0].document.name, "stable-4.2");
  auto strict = Load(t, {ErrorClass::kDeserialize});
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("channels/fast-4.2.yaml"), std::string::npos);
}

// ---- applying graph-data ----

Graph RawGraph() {
  // 4.1.0/4.1.1/4.2.0 amd64, 4.1.1 s390x, abstract 4.1.0+s390x, legacy 4.2.11-s390x+s390x.
  auto g = ReadGraphJson(R"({"nodes":[
    {"version":"4.1.0+amd64","payload":"a","metadata":{"io.openshift.upgrades.graph.release.arch":"amd64"}},
    {"version":"4.1.1+amd64","payload":"b","metadata":{"io.openshift.upgrades.graph.release.arch":"amd64"}},
    {"version":"4.2.0+amd64","payload":"c","metadata":{"io.openshift.upgrades.graph.release.arch":"amd64","url":"u"}},
    {"version":"4.1.1+s390x","payload":"d","metadata":{"io.openshift.upgrades.graph.release.arch":"s390x"}},
    {"version":"4.1.0+s390x"},
    {"version":"4.2.11-s390x+s390x","payload":"e","metadata":{"io.openshift.upgrades.graph.release.arch":"s390x"}}],
    "edges":[[0,1],[4,3],[1,2],[0,2]]})");
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::move(g).value();
}

Graph Applied(const Tree& t) {
  Diagnostics d;
  auto data = LoadGraphData(t.root(), {}, d);
  EXPECT_TRUE(data.ok()) << data.status().message();
  Graph g = RawGraph();
  ApplyGraphData(*data, "io.openshift.upgrades.graph", g);
  return g;
}

const Metadata& Md(const Graph& g, const char* v) { return g.node(*g.Find(v)).metadata; }

TEST(ApplyGraphDataTest, RawMetadataAppliesToEveryArchAndAppends) {
  Tree t;
  WriteFile(t.dir / "raw/metadata.json", R"({"4.1.1": {"k": "v", "url": "x"}, "4.2.0": {"url": "w"}})");
  Graph g = Applied(t);
  EXPECT_EQ(Md(g, "4.1.1+amd64").at("k"), "v");
  EXPECT_EQ(Md(g, "4.1.1+s390x").at("k"), "v");
  EXPECT_EQ(Md(g, "4.2.0+amd64").at("url"), "u,w");
  EXPECT_FALSE(g.node(*g.Find("4.1.0+s390x")).concrete);
}

TEST(ApplyGraphDataTest, RawMetadataCannotSetReservedKeys) {
  // Keys only the graph builder writes (internal metadata the policy engine decodes)
  // are skipped with a warning; the rest of the entry applies.
  Tree t;
  WriteFile(t.dir / "raw/metadata.json",
            R"({"4.1.1": {"k": "v", "io.openshift.upgrades.graph.hotfix.rules": "garbage"}})");
  Diagnostics d;
  auto data = LoadGraphData(t.root(), {}, d);
  ASSERT_TRUE(data.ok()) << data.status().message();
  ASSERT_EQ(d.Count(Diagnostic::Severity::kWarning), 1u);
  EXPECT_NE(d.items()[0].message.find("'io.openshift.upgrades.graph.hotfix.rules' is reserved"), std::string::npos)
      << d.items()[0].message;
  Graph g = Applied(t);
  EXPECT_EQ(Md(g, "4.1.1+amd64").at("k"), "v");
  EXPECT_FALSE(Md(g, "4.1.1+amd64").count("io.openshift.upgrades.graph.hotfix.rules"));

  // Under a custom key prefix, its reserved keys are skipped when applied.
  GraphData custom = *data;
  custom.raw_metadata[0].values.emplace_back("custom.prefix.phased.start", "garbage");
  Graph h = RawGraph();
  ApplyGraphData(custom, "custom.prefix", h);
  EXPECT_EQ(Md(h, "4.1.1+amd64").at("k"), "v");
  EXPECT_FALSE(Md(h, "4.1.1+amd64").count("custom.prefix.phased.start"));
}

TEST(ApplyGraphDataTest, UnconditionalBlocksTargetArches) {
  Tree t;
  WriteFile(t.dir / "blocked-edges/4.1.1.yaml", "to: 4.1.1\nfrom: 4[.]1[.]0\n");
  WriteFile(t.dir / "blocked-edges/4.2.0-a.yaml", "to: 4.2.0+amd64\nfrom: first\n");
  WriteFile(t.dir / "blocked-edges/4.2.0-b.yaml", "to: 4.2.0+amd64\nfrom: second\n");  // read last, wins
  WriteFile(t.dir / "blocked-edges/4.2.11-s390x.yaml", "to: 4.2.11-s390x\nfrom: .*\n");
  Graph g = Applied(t);
  EXPECT_EQ(Md(g, "4.1.1+amd64").at(kRemoveRegex), "4[.]1[.]0");
  EXPECT_EQ(Md(g, "4.1.1+s390x").at(kRemoveRegex), "4[.]1[.]0");
  EXPECT_EQ(Md(g, "4.2.0+amd64").at(kRemoveRegex), "second");
  EXPECT_EQ(Md(g, "4.2.11-s390x+s390x").at(kRemoveRegex), ".*");
  EXPECT_FALSE(Md(g, "4.1.0+amd64").count(kRemoveRegex));
}

TEST(ApplyGraphDataTest, ConditionalBlocksAppendRegexAndRecordTemplates) {
  Tree t;
  WriteFile(t.dir / "blocked-edges/4.2.0.yaml", "to: 4.2.0\nfrom: 4[.]1[.]1\n");
  WriteFile(t.dir / "blocked-edges/4.2.0-Foo.yaml",
            "to: 4.2.0+s390x\nfrom: 4[.]1[.]0[+].*\nurl: https://x\nname: Foo\nmessage: m\n"
            "matchingRules:\n- type: Always\n");
  Graph g = Applied(t);
  // Explicit build is not honoured for the regex: every arch where the node exists.
  EXPECT_EQ(Md(g, "4.2.0+amd64").at(kRemoveRegex), "4[.]1[.]1|4[.]1[.]0[+].*");
  ASSERT_EQ(g.risk_templates().size(), 1u);
  EXPECT_EQ(g.risk_templates()[0].to, "4.2.0+s390x");
  EXPECT_EQ(g.risk_templates()[0].risks[0].name, "Foo");
}

TEST(ApplyGraphDataTest, ChannelsMatchByVersionAndOptionalBuild) {
  Tree t;
  WriteFile(t.dir / "channels/stable-4.2.yaml", "name: stable-4.2\nversions: [4.1.1, 4.2.0]\n");
  WriteFile(t.dir / "channels/fast-4.2.yaml", "name: fast-4.2\nversions: [4.1.0, 4.1.1+s390x, 4.2.0]\n");
  WriteFile(t.dir / "channels/candidate-4.1.yaml", "name: candidate-4.1\nversions: [4.1.0, 4.2.11-s390x]\n");
  Graph g = Applied(t);
  EXPECT_EQ(Md(g, "4.1.0+amd64").at(kChannels), "candidate-4.1,fast-4.2");
  EXPECT_EQ(Md(g, "4.1.1+amd64").at(kChannels), "stable-4.2");
  EXPECT_EQ(Md(g, "4.1.1+s390x").at(kChannels), "fast-4.2,stable-4.2");
  EXPECT_EQ(Md(g, "4.2.11-s390x+s390x").at(kChannels), "candidate-4.1");
  // Graph-data never touches edges.
  EXPECT_EQ(g.edge_count(), 4u);
}

TEST(SecondaryMetadataParseTest, DirectoryParameterOverridesSetting) {
  Tree t;
  WriteFile(t.dir / "channels/stable-4.2.yaml", "name: stable-4.2\nversions: [4.2.0]\n");
  SecondaryMetadataParse step(SecondaryMetadataSettings{.data_directory = "/nonexistent", .disallowed_errors = {}});
  TransformContext context;
  EXPECT_FALSE(step.Apply(RawGraph(), context).ok());
  context.parameters.emplace("io.openshift.upgrades.secondary_metadata.directory", t.root().string());
  auto g = step.Apply(RawGraph(), context);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Md(*g, "4.2.0+amd64").at(kChannels), "stable-4.2");
}

}  // namespace
}  // namespace cincinnati::graphdata
