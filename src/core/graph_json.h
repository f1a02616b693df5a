// Cincinnati JSON: the graph document served by the graph builder and policy engine.
//
// Output is compact with keys in the reference's order: optional "version", "nodes"
// ({"version","payload","metadata"} or {"version"} for abstract nodes), "edges" as
// [from,to] index pairs, "conditionalEdges" (omitted only for a graph that never had
// the list). Metadata keys come out sorted, so output is deterministic.
//
// Input follows the reference's rules: "nodes" and "edges" required,
// "conditionalEdges" optional, any other top-level key rejected except "version" (so a
// policy engine can read another policy engine; such a graph is marked a served
// view); versions non-empty and unique; edge indices in range; no cycles. Every error
// names the offending node, edge or key.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/graph.h"
#include "core/status.h"

namespace cincinnati {

struct GraphJsonWriteOptions {
  std::optional<int> schema_version;  // set: the versioned (policy-engine) form
};

std::string WriteGraphJson(const Graph& graph, const GraphJsonWriteOptions& options = {});
void AppendConditionalEdgeJson(std::string& out, const ConditionalEdge& edge);

struct GraphJsonReadOptions {
  bool allow_version_key = true;
};

Result<Graph> ReadGraphJson(std::string_view json, const GraphJsonReadOptions& options = {});

}  // namespace cincinnati
