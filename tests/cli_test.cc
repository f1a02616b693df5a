// End-to-end tests of the `cincinnati` executable: real process, real files.
#include <sys/wait.h>

#include <array>
#include <cstdio>

#include <gtest/gtest.h>

#include "core/graph_json.h"
#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

using testing::ProcessResult;
ProcessResult Cincinnati(const std::string& args, const std::string& stdin_file = "") {
  return testing::RunCincinnati(args, stdin_file);
}

const fs::path kFixture = testing::Fixtures() / "secondary-metadata/20200319.204124";

TEST(CliTest, GraphBuildPrintsTheGraphBuilderGraph) {
  ProcessResult r = Cincinnati("graph build --releases " + (kFixture / "graph-gb-raw.json").string() + " --graph-data " +
                     (kFixture / "cincinnati-graph-data").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto g = ReadGraphJson(r.out);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->edge_count(), 559u);
  EXPECT_EQ(g->node_count(), 132u);
}

TEST(CliTest, GraphBuildFailsOnDisallowedErrorNamingTheFile) {
  const fs::path with_owners = testing::Fixtures() / "secondary-metadata/20200220.104838";
  ProcessResult ok = Cincinnati("graph build --releases " + (with_owners / "graph-gb-raw.json").string() +
                                " --graph-data " + (with_owners / "cincinnati-graph-data").string());
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_NE(ok.err.find("warning: channels/_OWNERS"), std::string::npos) << ok.err;
  ProcessResult r = Cincinnati("graph build -q --releases " + (with_owners / "graph-gb-raw.json").string() +
                               " --graph-data " + (with_owners / "cincinnati-graph-data").string() +
                               " --disallowed-errors missing_extension");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("_OWNERS"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
  ProcessResult bad = Cincinnati("graph build --releases /nonexistent.json --graph-data " +
                       (kFixture / "cincinnati-graph-data").string());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("/nonexistent.json"), std::string::npos) << bad.err;
}

TEST(CliTest, GraphFilterFromFileAndStdin) {
  TempDir tmp;
  ProcessResult built = Cincinnati("graph build -q --releases " + (kFixture / "graph-gb-raw.json").string() +
                         " --graph-data " + (kFixture / "cincinnati-graph-data").string());
  ASSERT_EQ(built.exit_code, 0);
  testing::WriteFile(tmp / "gb.json", built.out);
  ProcessResult file = Cincinnati("graph filter --channel stable-4.3 --arch amd64 " + (tmp / "gb.json").string());
  ASSERT_EQ(file.exit_code, 0) << file.err;
  ProcessResult piped = Cincinnati("graph filter --channel stable-4.3", (tmp / "gb.json").string());
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(file.out, piped.out);
  EXPECT_EQ(file.out.rfind(R"({"version":1,"nodes":[)", 0), 0u);
  auto view = ReadGraphJson(file.out);
  ASSERT_TRUE(view.ok());
  EXPECT_GT(view->node_count(), 5u);
  for (const Node& n : view->nodes()) {
    EXPECT_EQ(n.version.find('+'), std::string::npos) << n.version;
    EXPECT_NE(n.metadata.at("io.openshift.upgrades.graph.release.channels").find("stable-4.3"), std::string::npos);
  }
}

TEST(CliTest, GraphFilterReportsReferenceErrorKinds) {
  TempDir tmp;
  testing::WriteFile(tmp / "g.json", R"({"nodes":[],"edges":[]})");
  ProcessResult missing = Cincinnati("graph filter " + (tmp / "g.json").string());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("missing_params: mandatory client parameters missing: channel"), std::string::npos);
  ProcessResult invalid = Cincinnati("graph filter --channel Bad " + (tmp / "g.json").string());
  EXPECT_NE(invalid.err.find("invalid_params"), std::string::npos);
  testing::WriteFile(tmp / "bad.json", R"({"nodes":[{"version":"1.0.0"}],"edges":[[0,3]]})");
  ProcessResult bad = Cincinnati("graph filter --channel a " + (tmp / "bad.json").string());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("out of range"), std::string::npos) << bad.err;
}

TEST(CliTest, GraphDataCheck) {
  ProcessResult good = Cincinnati("graph-data check " +
                        testing::FixtureGraphData().string());
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_NE(good.err.find("0 error(s)"), std::string::npos) << good.err;
  ProcessResult bad = Cincinnati("graph-data check " +
                       (testing::Fixtures() / "secondary-metadata/invalid0/cincinnati-graph-data").string());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("error: blocked-edges/missing_extension: missing_extension"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("error: channels/"), std::string::npos) << bad.err;
}

TEST(CliTest, HelpOnEverySubcommand) {
  for (const char* sub : {"", "graph", "graph build", "graph filter", "graph-data", "graph-data check"}) {
    ProcessResult r = Cincinnati(std::string(sub) + " --help");
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub << ": " << r.out;
  }
  EXPECT_NE(Cincinnati("graph bogus").exit_code, 0);
}

TEST(CliTest, RolloutPreview) {
  fs::path example = testing::Examples() / "phased";
  ProcessResult r = Cincinnati("rollout preview --releases " + (example / "releases").string() + " --graph-data " +
                               (example / "graph-data").string() +
                               " --channel stable-4.4 --id 2b1d6a9e-0c61-4d8e-a5f7-2f7f3c1c9e01 --at 2020-05-13T00:00:00Z");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("4.4.2 -> 4.4.3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("visible  (window 2d00h"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in 1d12h  (window 14d00h"), std::string::npos) << r.out;
  EXPECT_NE(Cincinnati("rollout preview --releases x --graph-data y --channel c --at tomorrow").exit_code, 0);
}

TEST(CliTest, DiffCheckGuardsRolloutsInFlight) {
  fs::path example = testing::Examples() / "phased/graph-data";
  TempDir tmp;
  fs::copy(example, tmp / "new", fs::copy_options::recursive);
  const std::string file = (tmp / "new/channels/4.4.yaml").string();
  const std::string original = testing::ReadFile(file);
  auto check = [&](const std::string& at, const std::string& extra = "") {
    return Cincinnati("graph-data diff-check " + example.string() + " " + (tmp / "new").string() + " --at " + at + extra);
  };
  auto rewrite = [&](const std::string& from, const std::string& to) {
    std::string text = original;
    text.replace(text.find(from), from.size(), to);
    testing::WriteFile(file, text);
  };
  EXPECT_EQ(check("2020-05-13T00:00:00Z").exit_code, 0);  // no change

  // Moving 4.4.3's start a day later in the middle of its window takes the patch edge
  // away from the half of the clusters that already see it.
  rewrite("start: 2020-05-12T00:00Z", "start: 2020-05-13T00:00Z");
  ProcessResult moved = check("2020-05-13T00:00:00Z");
  EXPECT_EQ(moved.exit_code, 1);
  EXPECT_NE(moved.err.find("release 4.4.3, channel stable-4.4 (patch edges): 50.0% of clusters would lose it"),
            std::string::npos) << moved.err;
  EXPECT_EQ(check("2020-05-13T00:00:00Z", " --force").exit_code, 0);
  EXPECT_EQ(check("2020-05-11T00:00:00Z").exit_code, 0);  // before the window: nobody is affected

  // A locked entry may be changed.
  rewrite("start: 2020-05-12T00:00Z", "start: 2020-05-13T00:00Z\n  locked: true");
  ProcessResult locked = check("2020-05-13T00:00:00Z");
  EXPECT_EQ(locked.exit_code, 0) << locked.err;
  EXPECT_NE(locked.err.find("[locked: allowed]"), std::string::npos);

  // Shortening the patch window six hours in: from 12.5% to 50% of clusters at once.
  rewrite("duration: P2D", "duration: PT12H");
  ProcessResult shorter = check("2020-05-12T06:00:00Z");
  EXPECT_EQ(shorter.exit_code, 1);
  EXPECT_NE(shorter.err.find("37.5% of clusters would gain it at once (12.5% -> 50.0%)"), std::string::npos)
      << shorter.err;
}

TEST(CliTest, BundledExampleBuildsAndPassesLint) {
  fs::path example = testing::Examples() / "ocp-4x";
  ProcessResult lint = Cincinnati("graph-data check " + (example / "graph-data").string());
  EXPECT_EQ(lint.exit_code, 0) << lint.err;
  ProcessResult r = Cincinnati("graph build --releases " + (example / "releases").string() + " --graph-data " +
                     (example / "graph-data").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto g = ReadGraphJson(r.out);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_FALSE(g->conditional_edges().empty());
}

}  // namespace
}  // namespace cincinnati

namespace cincinnati {
namespace {

TEST(CliTest, ClustersSubcommandsManageTheDirectoryFile) {
  TempDir dir;
  std::string db = " --db " + (dir / "c.db").string();
  EXPECT_EQ(Cincinnati("clusters list" + db).exit_code, 1);  // no file yet: a clear error
  ProcessResult imported = Cincinnati("clusters import" + db + " " + (testing::Examples() / "ocp-4x/clusters.csv").string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_NE(imported.err.find("imported 3 clusters"), std::string::npos);
  ASSERT_EQ(Cincinnati("clusters add" + db + " NEW-1 --customer acme --label tier=gold").exit_code, 0);
  ProcessResult again = Cincinnati("clusters add" + db + " new-1 --customer acme");
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("cluster new-1 already exists"), std::string::npos) << again.err;
  ASSERT_EQ(Cincinnati("clusters update" + db + " new-1 --customer globex --remove-label tier --label zone=a").exit_code, 0);
  ProcessResult listed = Cincinnati("clusters list" + db + " --customer globex");
  EXPECT_EQ(listed.out, "id,customer,labels\n7c9e6679-7425-40de-944b-e07fc1f90ae7,globex,region=eu-west;tier=silver\n"
                        "new-1,globex,zone=a\n");
  // Export as JSON and import it into a fresh file: the same list.
  std::string json = (dir / "all.json").string();
  ASSERT_EQ(Cincinnati("clusters export" + db + " -o " + json).exit_code, 0);
  std::string copy = " --db " + (dir / "copy.db").string();
  ASSERT_EQ(Cincinnati("clusters import" + copy + " " + json).exit_code, 0);
  EXPECT_EQ(Cincinnati("clusters list" + copy).out, Cincinnati("clusters list" + db).out);
  ASSERT_EQ(Cincinnati("clusters remove" + db + " new-1").exit_code, 0);
  EXPECT_EQ(Cincinnati("clusters remove" + db + " new-1").exit_code, 1);
  // A bad import file names the line and changes nothing.
  testing::WriteFile(dir / "bad.csv", "id,customer,labels\nx1,acme,\nx2,acme,novalue\n");
  ProcessResult bad = Cincinnati("clusters import" + db + " " + (dir / "bad.csv").string());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("line 3"), std::string::npos) << bad.err;
  EXPECT_EQ(Cincinnati("clusters list" + db).out.find("x1"), std::string::npos);
}

}  // namespace
}  // namespace cincinnati
