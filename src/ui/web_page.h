// The graph page: one self-contained HTML document (no outside resources) that a
// policy engine or `serve` answers at `/`. It asks the service for
//   {prefix}/v1/ui/channels          channels and architectures of the graph
//   {prefix}/v1/graph                the channel's view (releases, their metadata, edges);
//                                    every channel's, once from/to are used (their choices)
//   {prefix}/v1/ui/graph.svg         that view laid out by Graphviz (ui/graph_render.h),
//                                    always with the blocked edges (hidden until asked)
//   {prefix}/v1/ui/rollouts          the channel's phased edges: share now, completion
//   {prefix}/v1/path, /v1/explain    paths and explanations (insight/)
// and lets a person pick a channel and arch, click a release for its metadata and
// errata link, draw a path between two releases, ask why an edge to or from any release
// of the graph is missing, show the blocked edges without a new layout, tell braked
// edges apart, and watch phased rollouts. The picture is scaled down to the width of its
// area ("1:1" draws it at its own size).
#pragma once

#include <string>
#include <string_view>

namespace cincinnati::ui {

// The page for a service whose routes live under `path_prefix` ("" or "/api/upgrades_info").
std::string GraphPage(std::string_view path_prefix);

}  // namespace cincinnati::ui
