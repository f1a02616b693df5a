// The graph builder's default chain: a release source (a local path, or a registry
// scrape as the reference does) -> openshift-secondary-metadata-parse (a local
// graph-data directory) -> edge-add-remove.
#pragma once

#include <filesystem>

#include "builder/edge_add_remove.h"
#include "builder/graph_data_git_source.h"
#include "builder/graph_data_image_source.h"
#include "builder/registry_source.h"
#include "builder/release_sources.h"
#include "core/transform.h"
#include "graph-data/secondary_metadata.h"

namespace cincinnati {

struct LocalBuildOptions {
  std::filesystem::path releases;    // graph JSON file or directory of release documents
  std::optional<RegistrySourceSettings> registry;  // set: scrape a registry instead
  std::filesystem::path graph_data;  // graph-data directory
  std::optional<GraphDataImageSettings> graph_data_image;  // set: graph-data from an image instead
  std::optional<GraphDataGitSettings> graph_data_git;      // set: graph-data from git instead
  ReleaseDirectoryOptions release_options;
  graphdata::SecondaryMetadataSettings secondary_metadata;  // data_directory is set from graph_data
  EdgeAddRemoveSettings edge_add_remove;
  bool node_remove = false;  // also run node-remove (not in the reference's default chain)
  // With a local graph-data directory: where graph-data.tar.gz of it is kept (empty:
  // no tarball, as with `graph build`).
  std::string graph_data_tarball_directory;
};

TransformChain MakeLocalBuilderChain(const LocalBuildOptions& options);

// Runs the chain from an empty graph.
Result<Graph> BuildLocalGraph(const LocalBuildOptions& options, TransformContext& context);

}  // namespace cincinnati
