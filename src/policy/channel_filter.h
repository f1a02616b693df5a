// "channel-filter" (openshift/cincinnati: cincinnati/src/plugins/internal/channel_filter.rs): keeps the concrete nodes whose
// `<prefix>.release.channels` list (comma-separated, items trimmed) contains the
// `channel` parameter exactly, their edges, and the conditional edges between them.
// A missing channel is MissingParams, a malformed one InvalidParams; an unknown but
// well-formed channel gives an empty graph. Metadata is left unchanged.
#pragma once

#include <string>

#include "core/metadata_keys.h"
#include "core/plugin_settings.h"
#include "core/transform.h"

namespace cincinnati::policy {

class ChannelFilter : public GraphTransform {
 public:
  explicit ChannelFilter(std::string key_prefix = std::string(kDefaultKeyPrefix),
                         std::string key_suffix = std::string(kChannelsSuffix))
      : key_(PrefixedKey(key_prefix, key_suffix)) {}
  std::string_view name() const override { return "channel-filter"; }
  Result<Graph> Apply(Graph graph, TransformContext& context) const override { return ApplyTo(graph, context); }
  Result<Graph> ApplyTo(const Graph& graph, TransformContext& context) const override;
  std::optional<std::vector<std::string>> cache_key_parameters() const override { return std::vector<std::string>{"channel"}; }
  // not_in_channel, naming the channels the release is in.
  StepReason ExplainLoss(const StepLoss& loss) const override;

 private:
  std::string key_;
};

// The `channel-filter` plugin table: key_prefix, key_suffix.
PluginStep ChannelFilterFromSettings(const PluginSettings& settings);

}  // namespace cincinnati::policy
