// Building transforms from plugin tables ([[plugin_settings]], [[policy]]) by the
// reference's plugin names, from one table of factories. Each plugin belongs to the
// graph builder, the policy engine or both; its settings are checked, and an unknown
// setting or plugin name, or a plugin in the other service's table, is an error naming
// it. Plugins that need GitHub or Quay are known names, but not available in this
// build, which is said plainly.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "cli/settings.h"
#include "core/transform.h"
#include "env/clock.h"
#include "policy/phased_rollout.h"

namespace cincinnati::cli {

enum class PluginRole { kGraphBuilder, kPolicyEngine };

// What a policy engine's `cincinnati-graph-fetch` table configures: its upstream.
struct UpstreamSettings {
  std::string url;
  std::optional<std::chrono::milliseconds> timeout;
};

// What some plugins need from the service that builds them.
struct PluginEnvironment {
  std::shared_ptr<const env::Clock> clock = env::SharedRealClock();  // phased-rollout
  UpstreamSettings* upstream = nullptr;         // cincinnati-graph-fetch (policy engine)
  PluginRole role = PluginRole::kGraphBuilder;  // set by MakeTransform
};

// The step a table makes; nullptr for a table that configures the service instead of
// adding a step (cincinnati-graph-fetch).
Result<std::unique_ptr<GraphTransform>> MakeTransform(const PluginTable& table, PluginRole role,
                                                      const PluginEnvironment& environment = {});

}  // namespace cincinnati::cli
