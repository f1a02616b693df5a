// End-to-end tests of the `cincinnati` executable: real process, real files.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>

#include <gtest/gtest.h>

#include "core/graph_json.h"
#include "core/graph_records.h"
#include "core/internal_metadata.h"
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
  // Exactly the graph builder's document (the conformance test compares it with the
  // reference's): the builder's records of what it removed are not in it.
  auto built = testing::BuildLocal(kFixture / "graph-gb-raw.json", kFixture / "cincinnati-graph-data");
  ASSERT_TRUE(built.ok());
  ASSERT_TRUE(HasExplanationKeys(*built));
  EXPECT_EQ(r.out, WriteServedGraphJson(*built) + "\n");
  EXPECT_EQ(r.out.find("io.openshift.upgrades.graph.removed."), std::string::npos);
  EXPECT_EQ(r.out.find("io.openshift.upgrades.graph.blocked.by"), std::string::npos);
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
  // A graph that carries a builder's records inline (an older graph builder's) is
  // filtered as a policy engine serves it: without them.
  auto built_graph = testing::BuildLocal(kFixture / "graph-gb-raw.json", kFixture / "cincinnati-graph-data");
  ASSERT_TRUE(built_graph.ok());
  testing::WriteFile(tmp / "inline.json", WriteGraphJson(*built_graph));
  ProcessResult inline_records = Cincinnati("graph filter --channel stable-4.3 --arch amd64 " + (tmp / "inline.json").string());
  ASSERT_EQ(inline_records.exit_code, 0) << inline_records.err;
  EXPECT_EQ(inline_records.out, file.out);
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

TEST(CliTest, MistypedFlagsAndSubcommandsAreNamed) {
  ProcessResult flag = Cincinnati("serve --graph-dat x");
  EXPECT_NE(flag.exit_code, 0);
  EXPECT_NE(flag.err.find("'--graph-dat' is unknown to 'serve'; did you mean '--graph-data'?"), std::string::npos)
      << flag.err;
  ProcessResult sub = Cincinnati("serv");
  EXPECT_NE(sub.exit_code, 0);
  EXPECT_NE(sub.err.find("'serv' is unknown; did you mean 'serve'?"), std::string::npos) << sub.err;
  ProcessResult nested = Cincinnati("graph rendr");
  EXPECT_NE(nested.err.find("'rendr' is unknown to 'graph'; did you mean 'render'?"), std::string::npos) << nested.err;
  // Flags as another command spells them: the agent's --port, oc's --to-version.
  ProcessResult port = Cincinnati("serve --port 18083");
  EXPECT_NE(port.exit_code, 0);
  EXPECT_NE(port.err.find("'--port' is unknown to 'serve'; did you mean '--service.port' or '--status.port'?"),
            std::string::npos)
      << port.err;
  ProcessResult to = Cincinnati("adm upgrade --to-version 4.1.1");
  EXPECT_NE(to.exit_code, 0);
  EXPECT_NE(to.err.find("'--to-version' is unknown to 'adm upgrade'; did you mean '--to'?"), std::string::npos) << to.err;
  ProcessResult far = Cincinnati("graph --completely-different");
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;  // nothing close: no guess
}

// One rule for the whole CLI: 2 for a usage error, our own message on the first line
// (the mistyped name, not what CLI11 concluded from it), then where the help is.
TEST(CliTest, AUsageErrorExitsTwoAndLeadsWithOurMessage) {
  auto first_line = [](const std::string& err) { return err.substr(0, err.find('\n')); };
  ProcessResult flag = Cincinnati("serve --graph-dat x");
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_EQ(first_line(flag.err), "error: '--graph-dat' is unknown to 'serve'; did you mean '--graph-data'?") << flag.err;
  EXPECT_NE(flag.err.find("Run `cincinnati serve --help` for its flags."), std::string::npos) << flag.err;
  // A mistyped required flag: the typo, not "--channel is required".
  ProcessResult path = Cincinnati("path --releases x --graph-data y --chanel stable-4.13 --from 4.13.0 --to 4.13.1");
  EXPECT_EQ(path.exit_code, 2);
  EXPECT_EQ(first_line(path.err), "error: '--chanel' is unknown to 'path'; did you mean '--channel'?") << path.err;
  // A flag like no other: named first, not "--channel is required".
  ProcessResult bogus = Cincinnati("explain --releases x --graph-data y --bogus 1");
  EXPECT_EQ(bogus.exit_code, 2);
  EXPECT_EQ(first_line(bogus.err), "error: '--bogus' is unknown to 'explain'") << bogus.err;
  // A nested command is named whole.
  EXPECT_EQ(first_line(Cincinnati("adm upgrade --bogus").err), "error: '--bogus' is unknown to 'adm upgrade'");
  ProcessResult missing = Cincinnati("graph render --releases x --graph-data y");
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_EQ(missing.err.rfind("error: ", 0), 0u) << missing.err;
  EXPECT_NE(missing.err.find("Run `cincinnati graph render --help` for its flags."), std::string::npos) << missing.err;
  EXPECT_EQ(Cincinnati("graph").exit_code, 2);
  ProcessResult top = Cincinnati("serv");
  EXPECT_EQ(top.exit_code, 2);
  EXPECT_NE(top.err.find("Run `cincinnati --help` for its commands."), std::string::npos) << top.err;
  // A bad value is a usage error too, said with the flag's name and where the help is.
  ProcessResult port = Cincinnati("serve --service.port abc");
  EXPECT_EQ(port.exit_code, 2) << port.err;
  EXPECT_NE(first_line(port.err).find("--service.port"), std::string::npos) << port.err;
  EXPECT_NE(first_line(port.err).find("'abc' is not a non-negative integer"), std::string::npos) << port.err;
  EXPECT_NE(port.err.find("Run `cincinnati serve --help` for its flags."), std::string::npos) << port.err;
  ProcessResult at = Cincinnati("rollout preview --releases x --graph-data y --channel c --at yesterday");
  EXPECT_EQ(at.exit_code, 2) << at.err;
  EXPECT_NE(first_line(at.err).find("--at"), std::string::npos) << at.err;
  EXPECT_NE(at.err.find("Run `cincinnati rollout preview --help` for its flags."), std::string::npos) << at.err;
  // The insight commands point at the port where their routes are (serve's or a policy
  // engine's, 8081), not the graph builder's.
  for (const char* sub : {"path", "explain"}) {
    ProcessResult help = Cincinnati(std::string(sub) + " --help");
    EXPECT_NE(help.out.find("http://127.0.0.1:8081/api/upgrades_info"), std::string::npos) << help.out;
    EXPECT_EQ(help.out.find(":8080"), std::string::npos) << help.out;
  }
  // Stated in every command's help.
  for (const char* sub : {"", "serve", "graph render", "upgrades pause", "fleet simulate"}) {
    ProcessResult help = Cincinnati(std::string(sub) + " --help");
    EXPECT_EQ(help.exit_code, 0) << sub;
    EXPECT_NE(help.out.find("Exit status: 0 on success, 1 when the command failed, 2 for a usage error"), std::string::npos)
        << sub << ": " << help.out;
  }
}

TEST(CliTest, MessagesNameEachThingOnceOnOneLine) {
  TempDir dir;
  testing::WriteFile(dir / "gd/version", "x.y\n");
  fs::create_directories(dir / "gd/channels");
  ProcessResult lint = Cincinnati("graph-data check " + (dir / "gd").string());
  EXPECT_EQ(lint.exit_code, 1);
  EXPECT_NE(lint.err.find("error: blocked-edges/: directory is missing\n"), std::string::npos) << lint.err;
  EXPECT_EQ(lint.err.find("blocked-edges/: blocked-edges/"), std::string::npos) << lint.err;
  EXPECT_NE(lint.err.find("error: version: invalid semantic version 'x.y\\n': "), std::string::npos) << lint.err;
  EXPECT_EQ(lint.err.find("version: version:"), std::string::npos) << lint.err;

  // A TOML setting of the wrong type names the file.
  testing::WriteFile(dir / "gb.toml", "[service]\npause_secs = \"abc\"\n");
  const fs::path seed = testing::Examples() / "seed";
  ProcessResult toml = Cincinnati("graph-builder -c " + (dir / "gb.toml").string() + " --releases " +
                                  (seed / "releases").string() + " --graph-data " + (seed / "graph-data").string());
  EXPECT_NE(toml.exit_code, 0);
  EXPECT_NE(toml.err.find((dir / "gb.toml").string() + ": setting 'service.pause_secs': 'abc' is not a non-negative integer"),
            std::string::npos) << toml.err;
  // A plugin this build does not have: the message lists what to use instead.
  testing::WriteFile(dir / "quay.toml", "[[plugin_settings]]\nname = \"quay-metadata\"\n");
  ProcessResult plugin = Cincinnati("graph-builder -c " + (dir / "quay.toml").string());
  EXPECT_NE(plugin.err.find("use 'git-secondary-metadata-scrape' or 'dkrv2-secondary-metadata-scrape'"),
            std::string::npos) << plugin.err;
}

// `graph build` takes graph-data from the same sources as the services.
TEST(CliTest, GraphBuildReadsGraphDataFromGit) {
  const fs::path seed = testing::Examples() / "seed";
  TempDir dir;
  fs::copy(seed / "graph-data", dir / "repo", fs::copy_options::recursive);
  const std::string git = "git -C " + (dir / "repo").string() + " -c user.name=t -c user.email=t@example.com ";
  ASSERT_EQ(std::system((git + "init -q -b main && " + git + "add -A && " + git + "commit -q -m seed").c_str()), 0);
  ProcessResult local = Cincinnati("graph build -q --releases " + (seed / "releases").string() + " --graph-data " +
                                   (seed / "graph-data").string());
  ProcessResult from_git = Cincinnati("graph build -q --releases " + (seed / "releases").string() +
                                      " --graph-data-git " + (dir / "repo").string() + " --graph-data-cache " +
                                      (dir / "cache").string());
  ASSERT_EQ(from_git.exit_code, 0) << from_git.err;
  EXPECT_EQ(from_git.out, local.out);
  ProcessResult none = Cincinnati("graph build --releases " + (seed / "releases").string());
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("give --graph-data, --graph-data-image or --graph-data-git"), std::string::npos) << none.err;
}

TEST(CliTest, ServiceHelpShowsTypesAndDefaults) {
  const std::string serve = Cincinnati("serve --help").out;
  const std::string gb = Cincinnati("graph-builder --help").out;
  const std::string pe = Cincinnati("policy-engine --help").out;
  EXPECT_NE(serve.find("--service.port PORT=8081"), std::string::npos) << serve;
  EXPECT_NE(gb.find("--service.port,--port PORT=8080"), std::string::npos) << gb;
  EXPECT_NE(gb.find("--service.pause_secs SECONDS=300"), std::string::npos) << gb;
  EXPECT_NE(serve.find("--web.enabled BOOL=true"), std::string::npos) << serve;
  EXPECT_NE(pe.find("--web.enabled BOOL=false"), std::string::npos) << pe;
  EXPECT_NE(pe.find("--cluster_directory.timeout_ms MILLISECONDS=500"), std::string::npos) << pe;
  EXPECT_NE(serve.find("-c,--config PATH"), std::string::npos) << serve;
  // --disallowed-errors lists the same choices wherever it is, and checks them.
  const std::string choices = "comma-separated: file, deserialize, missing_extension, invalid_extension";
  EXPECT_NE(gb.find(choices), std::string::npos) << gb;
  EXPECT_NE(Cincinnati("graph build --help").out.find(choices), std::string::npos);
  ProcessResult bogus = Cincinnati("serve --disallowed-errors file,bogus");
  EXPECT_NE(bogus.exit_code, 0);
  EXPECT_NE(bogus.err.find("unknown error class 'bogus'"), std::string::npos) << bogus.err;
}

TEST(CliTest, VersionNamesTheCommitAndBuildType) {
  ProcessResult r = Cincinnati("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("cincinnati 0.", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\ncommit "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nbuild "), std::string::npos) << r.out;
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

  ProcessResult unknown = Cincinnati("rollout preview --releases " + (example / "releases").string() + " --graph-data " +
                                     (example / "graph-data").string() + " --channel stable-4.44");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("unknown channel 'stable-4.44'; did you mean 'stable-4.4'? (channels: fast-4.4, stable-4.4)"),
            std::string::npos) << unknown.err;
}

// The preview answers as the service does: a hotfix release only for an entitled cluster.
TEST(CliTest, RolloutPreviewHidesHotfixesLikeTheService) {
  fs::path example = testing::Examples() / "ocp-4x";
  const std::string base = "rollout preview --releases " + (example / "releases").string() + " --graph-data " +
                           (example / "graph-data").string() + " --channel stable-4.13";
  ProcessResult anonymous = Cincinnati(base);
  ASSERT_EQ(anonymous.exit_code, 0) << anonymous.err;
  EXPECT_NE(anonymous.out.find("4.12.3 -> 4.13.0"), std::string::npos) << anonymous.out;
  EXPECT_EQ(anonymous.out.find("hotfix"), std::string::npos) << anonymous.out;
  ProcessResult entitled = Cincinnati(base + " --id 0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60 --entitled acme-etcd-defrag");
  ASSERT_EQ(entitled.exit_code, 0) << entitled.err;
  EXPECT_NE(entitled.out.find("4.12.3 -> 4.13.1-hotfix.1"), std::string::npos) << entitled.out;
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

  // A release new in the tree, started 12 hours into a two-day patch window: a quarter of
  // the clusters would get it at once (fast-4.4 has no phased rollouts: no change there).
  rewrite("- name: 4.4.3\n", "- name: 4.4.4\n  start: 2020-05-12T00:00Z\n- name: 4.4.3\n");
  ProcessResult added = check("2020-05-12T12:00:00Z");
  EXPECT_EQ(added.exit_code, 1) << added.err;
  EXPECT_NE(added.err.find("error: channels/4.4.yaml: new release 4.4.4, channel stable-4.4 (patch edges): 25.0% of "
                           "clusters would gain it at once (0.0% -> 25.0%)"),
            std::string::npos) << added.err;
  EXPECT_EQ(added.err.find("fast-4.4"), std::string::npos) << added.err;
  EXPECT_NE(added.err.find("1 change(s)"), std::string::npos) << added.err;  // the minor window: 12h of 14d is 3.6%
  ProcessResult forced = check("2020-05-12T12:00:00Z", " --force");
  EXPECT_EQ(forced.exit_code, 0);
  EXPECT_NE(forced.err.find("note: channels/4.4.yaml: new release 4.4.4"), std::string::npos) << forced.err;
  EXPECT_EQ(forced.err.find("error:"), std::string::npos) << forced.err;
  // Started as the window begins: nobody sees it yet, nothing to report.
  EXPECT_EQ(check("2020-05-12T00:00:00Z").exit_code, 0);

  // A channel without rules changes for all clusters at once: one line, not patch and minor.
  rewrite("start: 2020-05-12T00:00Z", "start: 2020-05-20T00:00Z");
  ProcessResult fast = check("2020-05-15T00:00:00Z");
  EXPECT_NE(fast.err.find("release 4.4.3, channel fast-4.4: 100.0% of clusters would lose it"), std::string::npos)
      << fast.err;
  EXPECT_EQ(fast.err.find("channel fast-4.4 (patch edges)"), std::string::npos) << fast.err;

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
