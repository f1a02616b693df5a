// The served graph the brake tests check reports against (reports/served_edges.h).
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include <fmt/format.h>

#include "core/graph_json.h"
#include "reports/served_edges.h"

namespace cincinnati::reports {

// The graph builder's graph: 4.13.1 -> 4.13.2 -> 4.13.3 and 4.13.1 -> 4.13.3 in
// stable-4.13 and fast-4.13 for amd64; 4.13.4 only in fast-4.13 (4.13.3 -> 4.13.4).
inline std::shared_ptr<const ServedEdges> TestGraph(bool with_4_13_2 = true) {
  auto node = [](const char* version, const char* channels) {
    return fmt::format(R"({{"version":"{}","payload":"r@sha256:{}","metadata":{{"io.openshift.upgrades.graph.release.channels":"{}",)"
                       R"("io.openshift.upgrades.graph.release.arch":"amd64"}}}})",
                       version, version, channels);
  };
  std::string json = R"({"nodes":[)" + node("4.13.1", "stable-4.13,fast-4.13") + "," +
                     node(with_4_13_2 ? "4.13.2" : "4.13.0", "stable-4.13,fast-4.13") + "," + node("4.13.3", "stable-4.13,fast-4.13") +
                     "," + node("4.13.4", "fast-4.13") + R"(],"edges":[[0,1],[0,2],[2,3]]})";
  if (!with_4_13_2) json = R"({"nodes":[)" + node("4.13.1", "stable-4.13") + "," + node("4.13.3", "stable-4.13") + R"(],"edges":[[0,1]]})";
  auto graph = ReadGraphJson(json);
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  return std::make_shared<const ServedEdges>(std::make_shared<const Graph>(std::move(graph).value()));
}

}  // namespace cincinnati::reports
