// "arch-filter" (openshift/cincinnati: cincinnati/src/plugins/internal/arch_filter.rs): keeps the concrete nodes whose
// `<prefix>.release.arch` list contains the `arch` parameter (default "amd64"),
// deletes that key from every node, and strips the arch from versions
// ("4.7.4+amd64" -> "4.7.4"), in nodes and conditional edges alike.
// Conditional edges are kept only when both endpoints are kept nodes (the reference
// uses a substring test, which can leave edges to nodes that no longer exist).
// A malformed arch is InvalidParams; a kept version that is not SemVer is ArchVersion.
// On a served view (another policy engine's answer, fetched for the same query) nodes
// without the arch key are kept, so that the filter is idempotent along a chain.
#pragma once

#include <string>

#include "core/metadata_keys.h"
#include "core/plugin_settings.h"
#include "core/transform.h"

namespace cincinnati::policy {

class ArchFilter : public GraphTransform {
 public:
  explicit ArchFilter(std::string key_prefix = std::string(kDefaultKeyPrefix),
                      std::string key_suffix = "release.arch", std::string default_arch = "amd64")
      : key_(PrefixedKey(key_prefix, key_suffix)), default_arch_(std::move(default_arch)) {}
  std::string_view name() const override { return "arch-filter"; }
  Result<Graph> Apply(Graph graph, TransformContext& context) const override { return ApplyTo(graph, context); }
  Result<Graph> ApplyTo(const Graph& graph, TransformContext& context) const override;
  std::optional<std::vector<std::string>> cache_key_parameters() const override { return std::vector<std::string>{"arch"}; }
  // not_for_arch.
  StepReason ExplainLoss(const StepLoss& loss) const override;

 private:
  std::string key_;
  std::string default_arch_;
};

// The `arch-filter` plugin table: key_prefix, key_suffix, default_arch (the reference's
// default_arch_threshold_version is accepted and ignored).
PluginStep ArchFilterFromSettings(const PluginSettings& settings);

}  // namespace cincinnati::policy
