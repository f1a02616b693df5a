#include "policy/channel_filter.h"

#include "core/strings.h"
#include "policy/params.h"

namespace cincinnati::policy {

Result<Graph> ChannelFilter::ApplyTo(const Graph& graph, TransformContext& context) const {
  CINCINNATI_ASSIGN_OR_RETURN(std::string channel, RequiredParam(context.parameters, kChannelParam));
  CINCINNATI_RETURN_IF_ERROR(ValidateChannel(channel));
  return graph.Retain([&](NodeIndex i) {
    const Node& n = graph.node(i);
    if (!n.concrete) return false;
    auto it = n.metadata.find(key_);
    return it != n.metadata.end() && ListContains(it->second, channel);
  });
}

}  // namespace cincinnati::policy
