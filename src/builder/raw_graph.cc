#include "builder/raw_graph.h"

#include <fmt/format.h>

namespace cincinnati {

Release MakeRelease(ReleaseMetadata document, std::string_view arch, std::string_view digest,
                    std::string payload, std::string_view manifestref_key) {
  std::vector<Identifier> build{Identifier::Text(std::string(arch))};
  if (auto n = ParseIdentifiers(arch); n.ok()) build = std::move(n).value();
  Release r;
  r.version = document.version.WithBuild(build);
  r.payload = std::move(payload);
  r.metadata = std::move(document.metadata);
  r.metadata.insert_or_assign(std::string(manifestref_key), std::string(digest));
  r.metadata.insert_or_assign(std::string(kArchKey), std::string(arch));
  r.previous = std::move(document.previous);
  r.next = std::move(document.next);
  return r;
}

Result<Graph> BuildRawGraph(const std::vector<Release>& releases, std::string_view manifestref_key) {
  Graph graph;
  auto digest_of = [&](const Node& n) -> std::string {
    auto it = n.metadata.find(manifestref_key);
    return it == n.metadata.end() ? "none" : it->second;
  };
  std::vector<NodeIndex> release_nodes;
  release_nodes.reserve(releases.size());
  for (const Release& r : releases) {
    Node node = Node::Concrete(r.version.ToString(), r.payload, r.metadata);
    if (auto existing = graph.Find(node.version)) {
      const Node& old = graph.node(*existing);
      if (old.concrete && digest_of(old) != digest_of(node)) {
        return Status::Conflict(fmt::format("mismatched manifest ref for concrete release {}: {} and {}",
                                            node.version, digest_of(old), digest_of(node)));
      }
      CINCINNATI_RETURN_IF_ERROR(graph.ReplaceNode(*existing, std::move(node)));
      release_nodes.push_back(*existing);
    } else {
      CINCINNATI_ASSIGN_OR_RETURN(NodeIndex i, graph.AddNode(std::move(node)));
      release_nodes.push_back(i);
    }
  }

  auto find_or_add = [&graph](std::string version) -> NodeIndex {
    if (auto i = graph.Find(version)) return *i;
    return graph.AddNode(Node::Abstract(std::move(version))).value();
  };
  std::vector<Edge> edges;
  for (size_t k = 0; k < releases.size(); ++k) {
    const Release& r = releases[k];
    NodeIndex self = release_nodes[k];
    for (const Version& p : r.previous) {
      edges.push_back(Edge{find_or_add(p.WithBuild(r.version.build()).ToString()), self});
    }
    for (const Version& n : r.next) {
      edges.push_back(Edge{self, find_or_add(n.WithBuild(r.version.build()).ToString())});
    }
  }
  for (const Edge& e : edges) {
    if (e.from == e.to) {
      return Status::Cycle(fmt::format("release {} lists itself as previous or next",
                                       graph.node(e.from).version));
    }
  }
  CINCINNATI_RETURN_IF_ERROR(graph.AddEdges(edges));
  return graph;
}

}  // namespace cincinnati
