#include "builder/node_remove.h"

namespace cincinnati {

Result<Graph> NodeRemove::Apply(Graph graph, TransformContext& context) const {
  const std::string key = PrefixedKey(key_prefix_, kReleaseRemoveSuffix);
  return graph.Retain([&](NodeIndex i) {
    const Node& n = graph.node(i);
    if (!n.concrete) return true;
    auto it = n.metadata.find(key);
    if (it == n.metadata.end() || it->second != "true") return true;
    context.diagnostics.Info(n.version, "removed by " + key);
    return false;
  });
}

}  // namespace cincinnati
