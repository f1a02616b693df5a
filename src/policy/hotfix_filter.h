// "hotfix-filter": hides hotfix releases (graph-data hotfixes/) from every cluster
// that may not see them.
//
// A node carrying hotfix rules stays only when the context's entitlements (which the
// policy engine sets from the cluster directory, never from the client's query) name
// one of its rules that lists the request's channel. Clusters without an id, unknown
// clusters and requests without a channel see no hotfix release. The rules key is
// always removed from the answer. The answer depends only on the channel and the
// entitlements, so it is cached. Rules that do not decode are an error naming the node.
#pragma once

#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/hotfix_rule.h"
#include "core/metadata_keys.h"
#include "core/plugin_settings.h"
#include "core/transform.h"

namespace cincinnati::policy {

class HotfixFilter : public GraphTransform {
 public:
  explicit HotfixFilter(std::string key_prefix = std::string(kDefaultKeyPrefix))
      : rules_key_(PrefixedKey(key_prefix, kHotfixRulesSuffix)) {}
  std::string_view name() const override { return "hotfix-filter"; }
  Result<Graph> Apply(Graph graph, TransformContext& context) const override;
  Result<Graph> ApplyTo(const Graph& graph, TransformContext& context) const override;
  std::optional<std::vector<std::string>> cache_key_parameters() const override;
  bool reads_entitlements() const override { return true; }
  // A hotfix is not explained to a cluster that may not see it: it is no release of
  // the graph for that cluster, and the hotfix's name (often its customer's) is not
  // theirs to read.
  bool removals_are_secret() const override { return true; }

 private:
  std::string rules_key_;
};

// The hotfix rules of a graph builder's graph, read once per graph for the service.
class HotfixIndex {
 public:
  explicit HotfixIndex(const Graph& graph, std::string_view key_prefix = kDefaultKeyPrefix);
  bool empty() const { return rules_.empty(); }
  const std::vector<HotfixRule>& rules() const { return rules_; }  // one per name
  // The names of the hotfixes in `channel` that apply to `cluster`, sorted: the
  // cluster's ClusterEntitlements::hotfixes.
  std::vector<std::string> Entitled(const ClusterInfo& cluster, std::string_view channel) const;

 private:
  std::vector<HotfixRule> rules_;
};

// The `hotfix-filter` plugin table: no settings.
PluginStep HotfixFilterFromSettings(const PluginSettings& settings);

}  // namespace cincinnati::policy
