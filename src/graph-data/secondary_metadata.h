// Applying graph-data to a graph (upstream's "openshift-secondary-metadata-parse" plugin), in the reference's order:
//  1. raw/metadata.json: for every concrete node semver-equal to the entry (build
//     ignored, so all arches), append ",value" to an existing key or set it;
//  2. unconditional blocked edges: set `<prefix>.previous.remove_regex` = from on the
//     target (explicit +build: that arch; legacy prerelease "-s390x": +s390x; else
//     every arch present in the graph), overwriting;
//  3. conditional blocked edges: record a risk template and append "|from" to the
//     target's remove_regex (every arch present; an explicit build is not honoured);
//  4. channels: append ",name" to `<prefix>.release.channels` of every member node
//     (semver-equal, and same build when the entry has one), then sort every list;
//  5. hotfixes: each release joins the hotfix's channels and gets its rule appended to
//     `<prefix>.hotfix.rules` (';'); an extra edge becomes `previous.add` (into the
//     release) or `next.add` (out of it) on the release's node.
// The step only writes metadata and risk templates; edge-add-remove acts on them.
#pragma once

#include <filesystem>
#include <string>

#include "core/metadata_keys.h"
#include "core/plugin_settings.h"
#include "core/transform.h"
#include "graph-data/graph_data.h"

namespace cincinnati::graphdata {

void ApplyGraphData(const GraphData& data, std::string_view key_prefix, Graph& graph);

struct SecondaryMetadataSettings {
  std::filesystem::path data_directory;  // overridden by the run parameter, when set
  std::string key_prefix = std::string(kDefaultKeyPrefix);
  std::string default_arch = "amd64";    // accepted for compatibility; unused upstream too
  ErrorClassSet disallowed_errors;
};

// "openshift-secondary-metadata-parse"
class SecondaryMetadataParse : public GraphTransform {
 public:
  explicit SecondaryMetadataParse(SecondaryMetadataSettings settings) : settings_(std::move(settings)) {}
  std::string_view name() const override { return "openshift-secondary-metadata-parse"; }
  Result<Graph> Apply(Graph graph, TransformContext& context) const override;

 private:
  SecondaryMetadataSettings settings_;
};

// The `openshift-secondary-metadata-parse` plugin table: data_directory, key_prefix,
// default_arch, disallowed_errors (a comma-separated list of error classes).
PluginStep SecondaryMetadataParseFromSettings(const PluginSettings& settings);

}  // namespace cincinnati::graphdata
