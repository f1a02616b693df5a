// A generated, OpenShift-shaped input at scale for benchmarks: release documents for
// 4.1..4.25 x 100 patches x 4 arches (10,000 releases) whose `previous` lists name the
// 15 preceding patches of the same minor and the last 10 patches of the minor before
// (as build-suggestions produce), plus graph-data with candidate/fast/stable channels
// per minor, EUS channels over two minors, and 2,000 blocked edges (1,500 conditional
// risks, 500 unconditional).
#pragma once

#include <filesystem>

#include "core/graph.h"

namespace cincinnati::bench {

struct GeneratedInput {
  std::filesystem::path releases;
  std::filesystem::path graph_data;
};

// Writes the input under `dir` (created if needed) and returns its parts.
GeneratedInput WriteGeneratedInput(const std::filesystem::path& dir);

// The input in the system's temp directory, written on first use (kept across runs).
const GeneratedInput& Generated();

// The graph builder's graph of Generated() (local chain, no clocks).
Graph GeneratedGraph();

}  // namespace cincinnati::bench
