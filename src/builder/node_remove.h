// "node-remove": drops every concrete node whose `<prefix>.release.remove` metadata is
// exactly "true", with its edges and the conditional edges that name it; in a graph
// builder it notes each on its predecessors (`removed.next`, for explanations).
#pragma once

#include <string>

#include "core/metadata_keys.h"
#include "core/plugin_settings.h"
#include "core/transform.h"

namespace cincinnati {

class NodeRemove : public GraphTransform {
 public:
  explicit NodeRemove(std::string key_prefix = std::string(kDefaultKeyPrefix), bool keep_records = true)
      : key_prefix_(std::move(key_prefix)), keep_records_(keep_records) {}
  std::string_view name() const override { return "node-remove"; }
  Result<Graph> Apply(Graph graph, TransformContext& context) const override;

 private:
  std::string key_prefix_;
  bool keep_records_;
};

// The `node-remove` plugin table: key_prefix. `keep_records`: the graph builder keeps
// records of what it removed (a policy engine would serve them with its answers).
PluginStep NodeRemoveFromSettings(const PluginSettings& settings, bool keep_records);

}  // namespace cincinnati
