// GraphJsonLayout: where each edge, conditional edge and conditional-edge reference lies
// in a graph's JSON document, so that a per-cluster answer (the same graph less some
// edges) can be assembled from the document's pieces instead of being written again
// (service/answer_pieces.h). The bytes are exactly WriteGraphJson's.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/graph_json.h"

namespace cincinnati {

struct GraphJsonLayout {
  struct Span {
    size_t begin = 0, end = 0;  // [begin, end) in the document
  };
  struct Group {
    Span whole;              // the {"edges":[...],"risks":[...]} object
    std::vector<Span> refs;  // each {"from":...,"to":...}
  };
  std::vector<Span> edges;    // each [from,to], in Graph::Edges() order
  std::vector<Group> groups;  // in conditional_edges() order
};

// WriteGraphJson, also filling `layout`.
std::string WriteGraphJson(const Graph& graph, const GraphJsonWriteOptions& options, GraphJsonLayout* layout);

}  // namespace cincinnati
