#include "core/graph_check.h"

#include <unordered_set>

#include <fmt/format.h>

#include "core/internal_metadata.h"
#include "core/semver.h"
#include "core/strings.h"

namespace cincinnati {

namespace {

Status Refuse(std::string what) { return Status::InvalidArgument("graph not served: " + std::move(what)); }

Status CheckNode(const Node& node, size_t index, std::string_view key_prefix) {
  if (!IsValidUtf8(node.version)) return Refuse(fmt::format("node {}: version is not valid UTF-8", index));
  auto parsed = Version::Parse(node.version);
  if (!parsed.ok()) {
    return Refuse(fmt::format("node {} ('{}'): not a SemVer version: {}", index, node.version, parsed.status().message()));
  }
  if (!IsValidUtf8(node.payload)) {
    return Refuse(fmt::format("node {} ('{}'): payload is not valid UTF-8", index, node.version));
  }
  for (const auto& [key, value] : node.metadata) {
    if (!IsValidUtf8(key) || !IsValidUtf8(value)) {
      return Refuse(fmt::format("node {} ('{}'): metadata key or value is not valid UTF-8", index, node.version));
    }
  }
  if (Status internal = CheckInternalMetadata(node.metadata, key_prefix); !internal.ok()) {
    return Refuse(fmt::format("node {} ('{}'): {}", index, node.version, internal.message()));
  }
  return Status::OK();
}

Status CheckConditionalEdge(const ConditionalEdge& group, size_t index,
                            const std::unordered_set<std::string_view>& versions) {
  if (group.edges.empty()) return Refuse(fmt::format("conditional edge group {} has no edges", index));
  if (group.risks.empty()) return Refuse(fmt::format("conditional edge group {} has no risks", index));
  for (const ConditionalEdgeRef& ref : group.edges) {
    for (const std::string* end : {&ref.from, &ref.to}) {
      if (!versions.count(*end)) {
        return Refuse(fmt::format("conditional edge {} -> {} (group {}): '{}' is not a node", ref.from, ref.to, index,
                                  *end));
      }
    }
  }
  for (const Risk& risk : group.risks) {
    if (risk.name.empty()) return Refuse(fmt::format("conditional edge group {}: a risk has no name", index));
    if (risk.matching_rules.empty()) {
      return Refuse(fmt::format("conditional edge group {}: risk '{}' has no matching rules", index, risk.name));
    }
    for (const std::string* text : {&risk.url, &risk.name, &risk.message}) {
      if (!IsValidUtf8(*text)) return Refuse(fmt::format("conditional edge group {}: risk text is not valid UTF-8", index));
    }
    for (const MatchingRule& rule : risk.matching_rules) {
      if (!IsValidUtf8(rule.promql)) {
        return Refuse(fmt::format("conditional edge group {}: risk '{}' PromQL is not valid UTF-8", index, risk.name));
      }
    }
  }
  return Status::OK();
}

}  // namespace

Status CheckServable(const Graph& graph, std::string_view key_prefix) {
  std::unordered_set<std::string_view> versions;
  versions.reserve(graph.node_count());
  for (size_t i = 0; i < graph.node_count(); ++i) {
    const Node& node = graph.node(static_cast<NodeIndex>(i));
    if (Status s = CheckNode(node, i, key_prefix); !s.ok()) return s;
    if (!versions.insert(node.version).second) return Refuse(fmt::format("version '{}' appears twice", node.version));
  }
  for (const Edge& e : graph.Edges()) {
    if (e.from >= graph.node_count() || e.to >= graph.node_count()) {
      return Refuse(fmt::format("edge [{}, {}] is out of range ({} nodes)", e.from, e.to, graph.node_count()));
    }
    if (e.from == e.to) return Refuse(fmt::format("edge [{}, {}] is a self-loop", e.from, e.to));
  }
  for (size_t i = 0; i < graph.conditional_edges().size(); ++i) {
    if (Status s = CheckConditionalEdge(graph.conditional_edges()[i], i, versions); !s.ok()) return s;
  }
  return Status::OK();
}

}  // namespace cincinnati
