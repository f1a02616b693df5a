// Pictures of a served view: Graphviz DOT text (pure), laid out and rendered by
// Graphviz's libgvc into SVG or PNG.
//
// Releases appear left to right in SemVer order (dot's layers follow the edges, which
// point from older to newer; declaring nodes in version order keeps ties stable). dot's
// layout takes seconds to minutes beyond a few hundred edges, so a view with more than
// 300 edges to draw is pinned to a version grid instead (a row per major.minor, wrapped
// every 25 releases; edges in a row arc above it) that Graphviz draws as given.
// Recommended edges are solid, conditional edges dashed and orange with their risks as
// label and tooltip, conditional edges held by a brake (a risk named
// AutomaticallyBlocked_...) solid, crimson and wide with "brake: RISK" as label, blocked
// edges (when given) dotted, red and wide with their cause as the tooltip (labels only in
// the layered layout). Every node and edge carries an SVG id ("release:4.12.3",
// "edge:4.12.3:4.13.0", "blocked:A:B") and a class (release, recommended, conditional,
// "conditional brake", blocked; highlighted for `highlight` and the hops of `path`) so
// that a page can select, restyle, show or hide them without a new layout.
// RenderDot serializes calls (Graphviz keeps global state); a DOT error or a missing
// renderer is an error naming the format. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace cincinnati::ui {

struct BlockedEdgeMark {
  std::string from, to, why;
};

struct DotOptions {
  std::string title;                          // graph label, e.g. "stable-4.13 (amd64)"
  std::vector<std::string> highlight;         // releases drawn bold (e.g. --from)
  std::vector<std::string> path;              // releases of a path, in order: its hops are bold
  std::vector<BlockedEdgeMark> blocked;       // drawn when given, unless the view has the edge (conditional)
};

std::string ViewDot(const Graph& view, const DotOptions& options = {});

// format: "svg", "png" or "dot" (the DOT text itself).
Result<std::string> RenderDot(const std::string& dot, std::string_view format);

}  // namespace cincinnati::ui
