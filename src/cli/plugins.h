// Building transforms from plugin tables ([[plugin_settings]], [[policy]]) by the
// reference's plugin names. Each plugin's settings are checked; an unknown setting or
// plugin name is an error naming it. Plugins that need a registry or GitHub are known
// names but not available in this build yet, which is said plainly.
#pragma once

#include <memory>
#include <string>

#include "cli/settings.h"
#include "core/transform.h"

namespace cincinnati::cli {

Result<std::unique_ptr<GraphTransform>> MakeTransform(const PluginTable& table);

}  // namespace cincinnati::cli
