#include "policy/channel_filter.h"

#include <fmt/format.h>

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

StepReason ChannelFilter::ExplainLoss(const StepLoss& loss) const {
  if (loss.to) return GraphTransform::ExplainLoss(loss);  // it removes releases, never an edge alone
  auto channel = loss.context.parameters.find(kChannelParam);
  const Metadata& metadata = loss.before.node(loss.from).metadata;
  auto it = metadata.find(key_);
  return {"not_in_channel",
          fmt::format("{} is not in channel {} (it is in {})", loss.from_version,
                      channel == loss.context.parameters.end() ? "" : channel->second,
                      it == metadata.end() || it->second.empty() ? "no channel" : it->second)};
}

PluginStep ChannelFilterFromSettings(const PluginSettings& r) {
  CINCINNATI_RETURN_IF_ERROR(r.CheckKnown({"key_prefix", "key_suffix"}));
  return std::unique_ptr<GraphTransform>(std::make_unique<ChannelFilter>(
      r.Get("key_prefix", std::string(kDefaultKeyPrefix)), r.Get("key_suffix", std::string(kChannelsSuffix))));
}

}  // namespace cincinnati::policy
