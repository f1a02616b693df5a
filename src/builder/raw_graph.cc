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

namespace {

// The version string of `v` with the build metadata `build` (a release's arch) in
// place of its own, written into `out`: what v.WithBuild(build).ToString() gives,
// without the copies (previous/next lists name tens of thousands of versions).
void VersionKey(const Version& v, std::string_view build, std::string& out) {
  out.clear();
  v.AppendWithoutBuild(out);
  if (!build.empty()) {
    out += '+';
    out += build;
  }
}

// `take(k)` gives release k's node (copied or moved out of the releases).
template <typename TakeNode>
Result<Graph> BuildFrom(const std::vector<Release>& releases, std::string_view manifestref_key, TakeNode take) {
  Graph graph;
  auto digest_of = [&](const Node& n) -> std::string {
    auto it = n.metadata.find(manifestref_key);
    return it == n.metadata.end() ? "none" : it->second;
  };
  std::vector<NodeIndex> release_nodes;
  release_nodes.reserve(releases.size());
  for (size_t k = 0; k < releases.size(); ++k) {
    Node node = take(k);
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

  std::string key;  // reused: one allocation for all the keys
  auto find_or_add = [&graph, &key]() -> NodeIndex {
    if (auto i = graph.Find(key)) return *i;
    return graph.AddNode(Node::Abstract(key)).value();
  };
  size_t edge_total = 0;
  for (const Release& r : releases) edge_total += r.previous.size() + r.next.size();
  std::vector<Edge> edges;
  edges.reserve(edge_total);
  std::string build;
  for (size_t k = 0; k < releases.size(); ++k) {
    const Release& r = releases[k];
    NodeIndex self = release_nodes[k];
    build.clear();
    r.version.AppendBuild(build);
    for (const Version& p : r.previous) {
      VersionKey(p, build, key);
      edges.push_back(Edge{find_or_add(), self});
    }
    for (const Version& n : r.next) {
      VersionKey(n, build, key);
      edges.push_back(Edge{self, find_or_add()});
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

}  // namespace

Result<Graph> BuildRawGraph(const std::vector<Release>& releases, std::string_view manifestref_key) {
  return BuildFrom(releases, manifestref_key, [&releases](size_t k) {
    const Release& r = releases[k];
    return Node::Concrete(r.version.ToString(), r.payload, r.metadata);
  });
}

Result<Graph> BuildRawGraph(std::vector<Release>&& releases, std::string_view manifestref_key) {
  return BuildFrom(releases, manifestref_key, [&releases](size_t k) {
    Release& r = releases[k];  // only its payload and metadata move; versions stay for the edges
    return Node::Concrete(r.version.ToString(), std::move(r.payload), std::move(r.metadata));
  });
}

}  // namespace cincinnati
