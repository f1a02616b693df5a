// The graph page: one self-contained HTML document (no outside resources) that a
// policy engine or `serve` answers at `/`. It asks the service for
//   {prefix}/v1/ui/channels          channels and architectures of the graph
//   {prefix}/v1/graph                the channel's view (releases, their metadata, edges)
//   {prefix}/v1/ui/graph.svg         that view laid out by Graphviz (ui/graph_render.h)
//   {prefix}/v1/ui/rollouts          the channel's phased edges: share now, completion
//   {prefix}/v1/path, /v1/explain    paths and explanations (insight/)
// and lets a person pick a channel and arch, click a release for its metadata and
// errata link, draw a path between two releases, ask why an edge is missing, show the
// blocked edges, and watch phased rollouts.
#pragma once

#include <string>
#include <string_view>

namespace cincinnati::ui {

// The page for a service whose routes live under `path_prefix` ("" or "/api/upgrades_info").
std::string GraphPage(std::string_view path_prefix);

}  // namespace cincinnati::ui
