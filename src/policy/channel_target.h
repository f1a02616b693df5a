// "channel-target": a channel is a pointer to a target release; a cluster that says
// which `version` it runs gets only the nodes and edges on paths from that version to
// the target, so every choice it makes leads there (one root, one leaf).
//
// The target is the release the graph-data names with `target`, else the channel's
// newest release by SemVer precedence. A version not in the view gets the view
// unchanged (the client reports VersionNotFound, as today); the target itself gets one
// node and no edges; a version that cannot reach the target gets itself alone.
// Conditional edges are trimmed the same way. Enabled for the listed channels ("*":
// all); for other channels, and when nothing is enabled (the default), the view is
// unchanged. The internal target key is always removed.
#pragma once

#include <set>
#include <string>

#include "core/metadata_keys.h"
#include "core/plugin_settings.h"
#include "core/transform.h"

namespace cincinnati::policy {

class ChannelTarget : public GraphTransform {
 public:
  explicit ChannelTarget(std::set<std::string> channels = {}, std::string key_prefix = std::string(kDefaultKeyPrefix))
      : channels_(std::move(channels)), targets_key_(PrefixedKey(key_prefix, kChannelTargetsSuffix)) {}
  std::string_view name() const override { return "channel-target"; }
  Result<Graph> Apply(Graph graph, TransformContext& context) const override { return ApplyTo(graph, context); }
  Result<Graph> ApplyTo(const Graph& graph, TransformContext& context) const override;
  std::optional<std::vector<std::string>> cache_key_parameters() const override;
  // Whether a request with these parameters gets a target view (a channel it is
  // enabled for, and a version).
  bool Serves(const Parameters& parameters) const {
    auto channel = parameters.find("channel");
    return channel != parameters.end() && parameters.count("version") && Enabled(channel->second);
  }

  // channel_target, naming the target.
  StepReason ExplainLoss(const StepLoss& loss) const override;

 private:
  bool Enabled(const std::string& channel) const { return channels_.count("*") || channels_.count(channel); }

  std::set<std::string> channels_;
  std::string targets_key_;
};

// The `channel-target` plugin table: channels (comma-separated; empty: every channel).
PluginStep ChannelTargetFromSettings(const PluginSettings& settings);

}  // namespace cincinnati::policy
