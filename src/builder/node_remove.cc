#include "builder/node_remove.h"

namespace cincinnati {

Result<Graph> NodeRemove::Apply(Graph graph, TransformContext& context) const {
  const std::string key = PrefixedKey(key_prefix_, kReleaseRemoveSuffix);
  const std::string removed_key = PrefixedKey(key_prefix_, kRemovedNextSuffix);
  auto removed = [&](NodeIndex i) {
    const Node& n = graph.node(i);
    auto it = n.metadata.find(key);
    return n.concrete && it != n.metadata.end() && it->second == "true";
  };
  // Each removed release is remembered on its predecessors, so that an explanation can
  // say why an update to it is gone.
  for (NodeIndex i = 0; i < graph.node_count(); ++i) {
    if (!removed(i)) continue;
    context.diagnostics.Info(graph.node(i).version, "removed by " + key);
    if (!keep_records_) continue;
    std::vector<NodeIndex> predecessors = graph.predecessors(i);
    for (NodeIndex p : predecessors) {
      std::string& list = graph.mutable_metadata(p)[removed_key];
      list += (list.empty() ? "" : ",") + graph.node(i).version;
    }
  }
  return graph.Retain([&](NodeIndex i) { return !removed(i); });
}

PluginStep NodeRemoveFromSettings(const PluginSettings& r, bool keep_records) {
  CINCINNATI_RETURN_IF_ERROR(r.CheckKnown({"key_prefix"}));
  return std::unique_ptr<GraphTransform>(
      std::make_unique<NodeRemove>(r.Get("key_prefix", std::string(kDefaultKeyPrefix)), keep_records));
}

}  // namespace cincinnati
