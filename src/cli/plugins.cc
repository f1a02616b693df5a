#include "cli/plugins.h"

#include <functional>
#include <map>

#include <fmt/format.h>

#include "builder/edge_add_remove.h"
#include "builder/graph_data_git_source.h"
#include "builder/graph_data_image_source.h"
#include "builder/node_remove.h"
#include "builder/registry_source.h"
#include "builder/release_sources.h"
#include "core/plugin_settings.h"
#include "graph-data/secondary_metadata.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"
#include "policy/channel_target.h"
#include "policy/hotfix_filter.h"
#include "policy/phased_rollout.h"

namespace cincinnati::cli {
namespace {

// A plugin's parser: its settings, and what the service lends it.
using Factory = std::function<PluginStep(const PluginSettings&, const PluginEnvironment&)>;

struct Plugin {
  std::optional<PluginRole> role;  // nullopt: both services
  Factory make;
};

// A parser that needs nothing of the service.
Factory Parser(PluginStep (*parse)(const PluginSettings&)) {
  return [parse](const PluginSettings& s, const PluginEnvironment&) { return parse(s); };
}

PluginStep NotInThisBuild(const PluginSettings& r, const PluginEnvironment&) {
  CINCINNATI_RETURN_IF_ERROR(r.CheckKnown({}));
  return Status::InvalidArgument(fmt::format(
      "plugin '{}' needs GitHub or Quay and is not available in this build; use 'git-secondary-metadata-scrape' "
      "or 'dkrv2-secondary-metadata-scrape' for graph-data, and 'release-scrape-dockerv2' or 'local-releases' "
      "for releases", r.name()));
}

// `phased-rollout` runs on the service's clock; it has no settings.
PluginStep PhasedRolloutPlugin(const PluginSettings& r, const PluginEnvironment& env) {
  CINCINNATI_RETURN_IF_ERROR(r.CheckKnown({}));
  return std::unique_ptr<GraphTransform>(std::make_unique<policy::PhasedRollout>(env.clock));
}

// `cincinnati-graph-fetch` adds no step: it sets the policy engine's upstream.
PluginStep GraphFetchPlugin(const PluginSettings& r, const PluginEnvironment& env) {
  CINCINNATI_RETURN_IF_ERROR(r.CheckKnown({"upstream", "timeout"}));
  if (!env.upstream) return Status::InvalidArgument("plugin 'cincinnati-graph-fetch' is not a step of this chain");
  env.upstream->url = r.Get("upstream", env.upstream->url);
  if (r.Get("timeout", "").empty()) return std::unique_ptr<GraphTransform>();
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t secs, r.Unsigned("timeout", 30));
  env.upstream->timeout = std::chrono::milliseconds(secs * 1000);
  return std::unique_ptr<GraphTransform>();
}

constexpr auto kBuilder = PluginRole::kGraphBuilder;
constexpr auto kPolicy = PluginRole::kPolicyEngine;

// The one table of plugins, by the reference's names (and ours). Each parser lives
// beside its transform and checks its own settings.
const std::map<std::string, Plugin>& Plugins() {
  static const auto* plugins = new std::map<std::string, Plugin>{
      {"local-releases", {kBuilder, Parser(LocalReleaseSourceFromSettings)}},
      {"release-scrape-dockerv2", {kBuilder, Parser(RegistryReleaseSourceFromSettings)}},
      {"dkrv2-secondary-metadata-scrape", {kBuilder, Parser(GraphDataImageSourceFromSettings)}},
      {"git-secondary-metadata-scrape", {kBuilder, Parser(GraphDataGitSourceFromSettings)}},
      {"openshift-secondary-metadata-parse", {kBuilder, Parser(graphdata::SecondaryMetadataParseFromSettings)}},
      {"edge-add-remove", {kBuilder, Parser(EdgeAddRemoveFromSettings)}},
      // In a policy engine the records would be served to clients with its answers.
      {"node-remove",
       {std::nullopt,
        [](const PluginSettings& r, const PluginEnvironment& e) {
          return NodeRemoveFromSettings(r, e.role == PluginRole::kGraphBuilder);
        }}},
      {"channel-filter", {kPolicy, Parser(policy::ChannelFilterFromSettings)}},
      {"arch-filter", {kPolicy, Parser(policy::ArchFilterFromSettings)}},
      {"hotfix-filter", {kPolicy, Parser(policy::HotfixFilterFromSettings)}},
      {"channel-target", {kPolicy, Parser(policy::ChannelTargetFromSettings)}},
      {"phased-rollout", {kPolicy, PhasedRolloutPlugin}},
      {"cincinnati-graph-fetch", {kPolicy, GraphFetchPlugin}},
      {"github-secondary-metadata-scrape", {kBuilder, NotInThisBuild}},
      {"quay-metadata", {kBuilder, NotInThisBuild}},
  };
  return *plugins;
}

}  // namespace

Result<std::unique_ptr<GraphTransform>> MakeTransform(const PluginTable& table, PluginRole role,
                                                      const PluginEnvironment& environment) {
  auto it = Plugins().find(table.name);
  if (it == Plugins().end()) return Status::InvalidArgument(fmt::format("unknown plugin '{}'", table.name));
  const Plugin& plugin = it->second;
  if (plugin.role && *plugin.role != role) {
    return Status::InvalidArgument(fmt::format("plugin '{}' is a {} plugin; it cannot be in {}", table.name,
                                               *plugin.role == kBuilder ? "graph-builder" : "policy-engine",
                                               role == kBuilder ? "[[plugin_settings]]" : "[[policy]]"));
  }
  PluginEnvironment with_role = environment;
  with_role.role = role;
  return plugin.make(PluginSettings(table.name, table.settings), with_role);
}

}  // namespace cincinnati::cli
