// Graph-data from a real git repository (libgit2, local path): the graph follows the
// requested revision, and a branch follows new commits through incremental fetches.
#include <gtest/gtest.h>

#include "builder/graph_data_git_source.h"
#include "builder/pipeline.h"
#include "registry/layer.h"
#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteFile;

std::string Git(const fs::path& repo, const std::string& args) {
  TempDir out;
  std::string cmd = "git -C " + repo.string() + " -c user.name=test -c user.email=test@example.com " + args + " > " +
                    (out / "out").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << testing::ReadFile(out / "out");
  std::string text = testing::ReadFile(out / "out");
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// Lends a transform to a chain without copying it (a source keeps its clone between runs).
struct Borrowed : GraphTransform {
  const GraphTransform& inner;
  explicit Borrowed(const GraphTransform& i) : inner(i) {}
  std::string_view name() const override { return inner.name(); }
  Result<Graph> Apply(Graph g, TransformContext& c) const override { return inner.Apply(std::move(g), c); }
};

std::string ChannelsOf(const Graph& g, const std::string& version) {
  const Node& n = g.node(*g.Find(version));
  auto it = n.metadata.find("io.openshift.upgrades.graph.release.channels");
  return it == n.metadata.end() ? "" : it->second;
}

TEST(GraphDataGitTest, FollowsTheRevision) {
  const fs::path example = testing::Examples() / "ocp-4x";
  TempDir dir;
  fs::copy(example / "graph-data", dir / "repo", fs::copy_options::recursive);
  Git(dir / "repo", "init -q -b main");
  Git(dir / "repo", "add -A");
  Git(dir / "repo", "commit -q -m first");
  std::string first = Git(dir / "repo", "rev-parse HEAD");
  WriteFile(dir / "repo/channels/stable-4.13.yaml", "name: stable-4.13\nversions: [4.13.0]\n");
  Git(dir / "repo", "commit -q -am second");
  std::string second = Git(dir / "repo", "rev-parse HEAD");

  TransformContext context;
  auto build = [&](const GraphDataGitSource& source) {
    TransformChain chain;
    chain.push_back(std::make_unique<LocalReleaseSource>(example / "releases"));
    chain.push_back(std::make_unique<Borrowed>(source));
    chain.push_back(std::make_unique<graphdata::SecondaryMetadataParse>(graphdata::SecondaryMetadataSettings{}));
    chain.push_back(std::make_unique<EdgeAddRemove>());
    context = TransformContext();
    auto g = RunChain(chain, Graph(), context);
    EXPECT_TRUE(g.ok()) << g.status().message();
    EXPECT_TRUE(fs::exists(context.parameters["io.openshift.upgrades.secondary_metadata.tar"]));
    return g.ok() ? std::move(g).value() : Graph();
  };

  GraphDataGitSettings s = ParseGitSpec((dir / "repo").string() + "#" + first);
  EXPECT_EQ(s.reference_revision, first);
  s.output_directory = (dir / "cache1").string();
  EXPECT_NE(ChannelsOf(build(GraphDataGitSource(s)), "4.13.1+amd64").find("stable-4.13"), std::string::npos);

  s = ParseGitSpec((dir / "repo").string() + "#" + second);
  s.output_directory = (dir / "cache2").string();
  EXPECT_EQ(ChannelsOf(build(GraphDataGitSource(s)), "4.13.1+amd64").find("stable-4.13"), std::string::npos);

  // A branch: one source instance, refreshed after a new commit (an incremental fetch).
  s = ParseGitSpec((dir / "repo").string() + "#main");
  EXPECT_EQ(s.reference_branch, "main");
  s.output_directory = (dir / "cache3").string();
  GraphDataGitSource branch(s);
  EXPECT_EQ(ChannelsOf(build(branch), "4.13.1+amd64").find("stable-4.13"), std::string::npos);  // at "second"
  WriteFile(dir / "repo/channels/stable-4.13.yaml", "name: stable-4.13\nversions: [4.13.0, 4.13.1]\n");
  Git(dir / "repo", "commit -q -am third");
  Graph third = build(branch);  // the same instance: fetches into its existing clone
  EXPECT_NE(ChannelsOf(third, "4.13.1+amd64").find("stable-4.13"), std::string::npos);
  auto tar = testing::ReadFile(context.parameters["io.openshift.upgrades.secondary_metadata.tar"]);
  auto channel = registry::ReadFileFromLayer(tar, "channels/stable-4.13.yaml");
  ASSERT_TRUE(channel.ok() && channel->has_value());
  EXPECT_NE((*channel)->find("4.13.1"), std::string::npos);

  // Without "#BRANCH": the remote's default branch (here main, not master).
  s = ParseGitSpec((dir / "repo").string());
  EXPECT_EQ(s.reference_branch, "");
  s.output_directory = (dir / "cache5").string();
  Graph head = build(GraphDataGitSource(s));
  EXPECT_NE(ChannelsOf(head, "4.13.1+amd64").find("stable-4.13"), std::string::npos);
  bool said_main = false;
  for (const Diagnostic& d : context.diagnostics.items()) {
    said_main = said_main || d.message.find("refs/remotes/origin/main") != std::string::npos;
  }
  EXPECT_TRUE(said_main);

  // A placeholder that keeps an empty directory in git is not a missing_extension problem.
  WriteFile(dir / "repo/blocked-edges/.gitkeep", "");
  WriteFile(dir / "repo/channels/.keep", "");
  Git(dir / "repo", "add -A");
  Git(dir / "repo", "commit -q -m placeholders");
  build(branch);
  for (const Diagnostic& d : context.diagnostics.items()) {
    EXPECT_EQ(d.message.find("no extension"), std::string::npos) << d.location << ": " << d.message;
  }

  GraphDataGitSettings missing = ParseGitSpec((dir / "repo").string() + "#no-such-branch");
  missing.output_directory = (dir / "cache4").string();
  TransformContext c;
  auto failed = GraphDataGitSource(missing).Apply(Graph(), c);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("no-such-branch"), std::string::npos);
}

}  // namespace
}  // namespace cincinnati
