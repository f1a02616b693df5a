// graph-data.tar.gz: the current graph-data as served on the graph builder's public
// listener, written atomically into an output directory.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace cincinnati {

// Tars the allow-listed files under `data_dir` (paths relative to it) into
// `<output_directory>/graph-data.tar.gz` and returns that path.
Result<std::string> WriteGraphDataTarball(const std::string& data_dir, const std::string& output_directory,
                                          const std::vector<std::string>& allowlist);

}  // namespace cincinnati
