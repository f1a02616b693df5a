// "node-remove": drops every concrete node whose `<prefix>.release.remove` metadata is
// exactly "true", with its edges and the conditional edges that name it.
#pragma once

#include <string>

#include "core/metadata_keys.h"
#include "core/transform.h"

namespace cincinnati {

class NodeRemove : public GraphTransform {
 public:
  explicit NodeRemove(std::string key_prefix = std::string(kDefaultKeyPrefix)) : key_prefix_(std::move(key_prefix)) {}
  std::string_view name() const override { return "node-remove"; }
  Result<Graph> Apply(Graph graph, TransformContext& context) const override;

 private:
  std::string key_prefix_;
};

}  // namespace cincinnati
