// graph-data.tar.gz: the current graph-data as served on the graph builder's public
// listener, written atomically into an output directory.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "core/transform.h"
#include "registry/layer.h"

#include <mutex>

namespace cincinnati {

// The layer entries of the graph-data under `dir`: its allow-listed files and its
// graph-data directories (IsGraphDataDirectory), empty or not, in path order. What
// `graph-data push` puts in an image and graph-data.tar.gz holds.
Result<std::vector<registry::LayerEntry>> GraphDataLayerEntries(const std::string& dir,
                                                                const std::vector<std::string>& allowlist);

// Tars GraphDataLayerEntries(data_dir) (paths relative to it) into
// `<output_directory>/graph-data.tar.gz` and returns that path.
Result<std::string> WriteGraphDataTarball(const std::string& data_dir, const std::string& output_directory,
                                          const std::vector<std::string>& allowlist);

// "local-graph-data": graph-data from a directory on disk. Points the parser at it and
// keeps graph-data.tar.gz of it in `output_directory` (rewritten when it changed).
// The graph passes through unchanged.
class LocalGraphDataSource : public GraphTransform {
 public:
  LocalGraphDataSource(std::string directory, std::string output_directory)
      : directory_(std::move(directory)), output_directory_(std::move(output_directory)) {}
  std::string_view name() const override { return "local-graph-data"; }
  Result<Graph> Apply(Graph graph, TransformContext& context) const override;

 private:
  std::string directory_, output_directory_;
  mutable std::mutex mu_;
  mutable std::string last_hash_, last_tar_;
};

}  // namespace cincinnati
