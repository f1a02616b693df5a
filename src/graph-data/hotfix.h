// Hotfix files: graph-data `hotfixes/` (optional, schema 1.x and 2.x). Each file makes
// releases the graph builder already has visible to some clusters only.
//
//   name: acme-ingress-fix        # optional; default: the file name without extension
//   customers: [acme]             # who sees it: these customers,
//   selectors:                    # or clusters whose labels match one selector
//   - {region: eu, tier: gold}    #   (every key of the selector must match)
//   channels: [stable-4.13]       # required: existing channels it is visible in
//   releases: [4.13.1-hotfix.1]   # required
//   edges:                        # optional extra edges; each touches a listed release
//   - {from: 4.12.5, to: 4.13.1-hotfix.1}
//
// At least one customer or selector. Names, customers, channels, label keys and values
// are HotfixTokens (core/hotfix_rule.h). Unknown keys are errors, as is any decoding
// error: a hotfix silently dropped would strand the customer who waits for it.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/hotfix_rule.h"
#include "core/semver.h"
#include "core/status.h"

namespace cincinnati::graphdata {

struct HotfixEdge {
  Version from, to;
};

struct Hotfix {
  HotfixRule rule;  // name, channels, customers, selectors
  std::vector<Version> releases;
  std::vector<HotfixEdge> edges;
};

Result<Hotfix> DecodeHotfix(const YAML::Node& doc, const std::string& default_name);

}  // namespace cincinnati::graphdata
