// "edge-add-remove" (openshift/cincinnati: cincinnati/src/plugins/internal/edge_add_remove.rs): turns edge metadata into edges, and risk templates
// into conditional edges.
//
// Keys on a node X (prefix P), comma-separated version lists with items trimmed:
//   P.previous.add (V->X), P.next.add (X->V), P.previous.remove (V->X; "*" removes
//   every incoming edge), P.previous.remove_regex (F->X for every predecessor F whose
//   version matches, unanchored RE2), P.next.remove (X->V).
// When X has the arch key, each listed V is read as SemVer (an error if it is not)
// with its build replaced by X's arch. A V that names no node is skipped with a warning.
// Order: all previous.add, all next.add, risk materialization, previous.remove,
// previous.remove_regex, next.remove; so every removal beats every addition, and
// conditional edges are made from the edges that exist before removals.
// An added edge that would close a cycle fails the step. Each removed edge is recorded
// on its target with the key that removed it (settings: record_removals).
#pragma once

#include <string>

#include "core/metadata_keys.h"
#include "core/plugin_settings.h"
#include "core/transform.h"

namespace cincinnati {

struct EdgeAddRemoveSettings {
  std::string key_prefix = std::string(kDefaultKeyPrefix);
  std::string remove_all_edges_value = "*";
  bool remove_consumed_metadata = false;
  bool include_conditional_edges = true;
  // Write <prefix>.removed.previous (core/internal_metadata.h) on every release that lost
  // an incoming edge, for explanations; the policy engine never serves it.
  bool record_removals = true;
};

class EdgeAddRemove : public GraphTransform {
 public:
  explicit EdgeAddRemove(EdgeAddRemoveSettings settings = {}) : settings_(std::move(settings)) {}
  std::string_view name() const override { return "edge-add-remove"; }
  Result<Graph> Apply(Graph graph, TransformContext& context) const override;

 private:
  EdgeAddRemoveSettings settings_;
};

// Materializes the graph's risk templates into conditional edges grouped by identical
// risk lists (appended to existing groups' list), then clears the templates.
Status MaterializeRisks(Graph& graph);

// The `edge-add-remove` plugin table: key_prefix, remove_all_edges_value,
// remove_consumed_metadata, include_conditional_edges.
PluginStep EdgeAddRemoveFromSettings(const PluginSettings& settings);

}  // namespace cincinnati
