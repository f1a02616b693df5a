// "git-secondary-metadata-scrape": graph-data from a git repository (libgit2), at a
// branch or a revision. Any URL libgit2 supports works, a local path included.
//
// The first run clones into the output directory; later runs fetch (incrementally) and
// check out the wanted commit only when it changed. The graph passes through
// unchanged; the run parameters name the checked-out directory (or its
// `graph_data_path` subdirectory) and a graph-data.tar.gz of its allow-listed files.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "builder/graph_data_image_source.h"
#include "core/plugin_settings.h"
#include "core/transform.h"

namespace cincinnati {

struct GraphDataGitSettings {
  std::string url;
  std::string reference_branch;    // empty: the remote's default branch (its HEAD); unused with a revision
  std::string reference_revision;           // a commit id
  std::string output_directory;             // required
  std::string graph_data_path = "/";
  std::vector<std::string> output_allowlist = DefaultGraphDataAllowlist();
};

// "URL#REF": REF is a 40-hex commit id (a revision) or a branch name; without "#REF",
// the remote's default branch.
GraphDataGitSettings ParseGitSpec(const std::string& spec);

class GraphDataGitSource : public GraphTransform {
 public:
  explicit GraphDataGitSource(GraphDataGitSettings settings) : settings_(std::move(settings)) {}
  std::string_view name() const override { return "git-secondary-metadata-scrape"; }
  Result<Graph> Apply(Graph graph, TransformContext& context) const override;

 private:
  GraphDataGitSettings settings_;
  mutable std::mutex mu_;
  mutable std::string last_commit_, last_tar_;
};

// The `git-secondary-metadata-scrape` plugin table: url and output_directory (required),
// reference_branch, reference_revision, graph_data_path, output_allowlist.
PluginStep GraphDataGitSourceFromSettings(const PluginSettings& settings);

}  // namespace cincinnati
