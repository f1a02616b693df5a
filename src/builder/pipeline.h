// The graph builder's chain for local inputs: local-releases ->
// openshift-secondary-metadata-parse -> edge-add-remove (the reference's default chain
// with the registry and GitHub scrapers replaced by local sources).
#pragma once

#include <filesystem>

#include "builder/edge_add_remove.h"
#include "builder/release_sources.h"
#include "core/transform.h"
#include "graph-data/secondary_metadata.h"

namespace cincinnati {

struct LocalBuildOptions {
  std::filesystem::path releases;    // graph JSON file or directory of release documents
  std::filesystem::path graph_data;  // graph-data directory
  ReleaseDirectoryOptions release_options;
  graphdata::SecondaryMetadataSettings secondary_metadata;  // data_directory is set from graph_data
  EdgeAddRemoveSettings edge_add_remove;
  bool node_remove = false;  // also run node-remove (not in the reference's default chain)
};

TransformChain MakeLocalBuilderChain(const LocalBuildOptions& options);

// Runs the chain from an empty graph.
Result<Graph> BuildLocalGraph(const LocalBuildOptions& options, TransformContext& context);

}  // namespace cincinnati
