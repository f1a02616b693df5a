#include "builder/pipeline.h"

#include "builder/graph_data_tarball.h"
#include "builder/node_remove.h"

namespace cincinnati {

TransformChain MakeLocalBuilderChain(const LocalBuildOptions& options) {
  TransformChain chain;
  if (options.registry) {
    chain.push_back(std::make_unique<RegistryReleaseSource>(*options.registry));
  } else {
    chain.push_back(std::make_unique<LocalReleaseSource>(options.releases, options.release_options));
  }
  if (options.graph_data_image) chain.push_back(std::make_unique<GraphDataImageSource>(*options.graph_data_image));
  if (options.graph_data_git) chain.push_back(std::make_unique<GraphDataGitSource>(*options.graph_data_git));
  if (!options.graph_data_image && !options.graph_data_git && !options.graph_data_tarball_directory.empty()) {
    chain.push_back(std::make_unique<LocalGraphDataSource>(options.graph_data.string(),
                                                           options.graph_data_tarball_directory));
  }
  graphdata::SecondaryMetadataSettings secondary = options.secondary_metadata;
  secondary.data_directory = options.graph_data;
  chain.push_back(std::make_unique<graphdata::SecondaryMetadataParse>(std::move(secondary)));
  chain.push_back(std::make_unique<EdgeAddRemove>(options.edge_add_remove));
  if (options.node_remove) chain.push_back(std::make_unique<NodeRemove>(options.edge_add_remove.key_prefix));
  return chain;
}

Result<Graph> BuildLocalGraph(const LocalBuildOptions& options, TransformContext& context) {
  return RunChain(MakeLocalBuilderChain(options), Graph(), context);
}

}  // namespace cincinnati
