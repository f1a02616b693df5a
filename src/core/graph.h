// Graph: the Cincinnati update graph, a DAG of releases.
//
// Nodes are identified by their exact version string. A concrete node is a release
// (payload + string metadata); an abstract node is a placeholder for a version that a
// release names in previous/next but that was not found. Edges mean "an update from
// `from` to `to` is recommended"; AddEdge refuses an edge that would close a cycle and
// names the versions on that cycle. Conditional edges carry risks and refer to nodes
// by version string, as on the wire. Risk templates are blocked-edge declarations
// waiting to be materialized by the edge-add-remove transform; they are not served.
//
// Node indices are stable for the life of a Graph: nodes are never removed in place.
// Retain() builds a new graph with a subset of nodes (used by removals and filters),
// keeping the relative order of nodes and edges. Edges iterate in insertion order.
// Not thread-safe for concurrent mutation; const access is safe to share.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace cincinnati {

using NodeIndex = uint32_t;
// Sorted keys: output is deterministic (the reference uses a hash map in production).
using Metadata = std::map<std::string, std::string, std::less<>>;

struct Node {
  std::string version;
  bool concrete = false;  // false: abstract placeholder, no payload or metadata
  std::string payload;
  Metadata metadata;

  static Node Concrete(std::string version, std::string payload, Metadata metadata = {}) {
    return Node{std::move(version), true, std::move(payload), std::move(metadata)};
  }
  static Node Abstract(std::string version) { return Node{std::move(version), false, {}, {}}; }
  bool operator==(const Node&) const = default;
};

struct MatchingRule {
  enum class Type { kAlways, kPromQL };
  Type type = Type::kAlways;
  std::string promql;  // only for kPromQL
  bool operator==(const MatchingRule&) const = default;
};

struct Risk {
  std::string url;
  std::string name;
  std::string message;
  std::vector<MatchingRule> matching_rules;
  bool operator==(const Risk&) const = default;
};

struct ConditionalEdgeRef {
  std::string from;
  std::string to;
  bool operator==(const ConditionalEdgeRef&) const = default;
};

struct ConditionalEdge {
  std::vector<ConditionalEdgeRef> edges;
  std::vector<Risk> risks;
  bool operator==(const ConditionalEdge&) const = default;
};

// A conditional blocked-edge declaration: every existing edge F->N whose N has version
// `to` (exactly, or before its "+build") and whose F matches `from_regex` gets `risks`.
struct RiskTemplate {
  std::string from_regex;
  std::string to;
  std::vector<Risk> risks;
  bool operator==(const RiskTemplate&) const = default;
};

struct Edge {
  NodeIndex from;
  NodeIndex to;
  bool operator==(const Edge&) const = default;
};

class Graph {
 public:
  // ---- nodes ----
  size_t node_count() const { return nodes_.size(); }
  const Node& node(NodeIndex i) const { return nodes_[i]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  Metadata& mutable_metadata(NodeIndex i) { return nodes_[i].metadata; }
  std::optional<NodeIndex> Find(std::string_view version) const;

  // Adds a node; fails if a node with the same version exists.
  Result<NodeIndex> AddNode(Node node);
  // Replaces the node at `i` in place (edges are kept). Its version may change only
  // to one that no other node has.
  Status ReplaceNode(NodeIndex i, Node node);
  // Changes the version string of node `i`.
  Status RenameNode(NodeIndex i, std::string version);
  // Gives every node a new version at once (versions[i] for node i); fails, changing
  // nothing, if two nodes would share a version.
  Status RenameAll(std::vector<std::string> versions);

  // ---- edges ----
  size_t edge_count() const { return edge_slot_.size(); }
  bool HasEdge(NodeIndex from, NodeIndex to) const;
  // Adds from->to. An existing edge is not an error. An edge closing a cycle (or a
  // self-loop) is refused with Status::Code::kCycle naming the versions on the cycle.
  Status AddEdge(NodeIndex from, NodeIndex to);
  // Adds many edges at once with one acyclicity check (Kahn, O(V+E)): the fast path
  // for loading whole graphs. On a cycle nothing is added and the Status names it.
  Status AddEdges(const std::vector<Edge>& edges);
  // Returns whether an edge was removed.
  bool RemoveEdge(NodeIndex from, NodeIndex to);
  // Live edges in insertion order.
  std::vector<Edge> Edges() const;
  const std::vector<NodeIndex>& predecessors(NodeIndex i) const { return in_[i]; }
  const std::vector<NodeIndex>& successors(NodeIndex i) const { return out_[i]; }

  // ---- conditional edges ----
  const std::vector<ConditionalEdge>& conditional_edges() const { return conditional_edges_; }
  std::vector<ConditionalEdge>& mutable_conditional_edges() { return conditional_edges_; }
  // Whether a serialized form carries a "conditionalEdges" key. The reference omits the
  // key only when the graph never had a list; anything built here sets it.
  bool conditional_edges_present() const { return conditional_edges_present_; }
  void set_conditional_edges_present(bool present) { conditional_edges_present_ = present; }

  // Keeps the conditional edges for which keep(ref) is true; drops emptied groups.
  void FilterConditionalEdges(const std::function<bool(const ConditionalEdgeRef&)>& keep);

  // Set when the graph was read from a policy engine's versioned document: its nodes
  // are already filtered for one channel and arch, and filters must keep them.
  bool is_served_view() const { return served_view_; }
  void set_served_view(bool v) { served_view_ = v; }

  const std::vector<RiskTemplate>& risk_templates() const { return risk_templates_; }
  std::vector<RiskTemplate>& mutable_risk_templates() { return risk_templates_; }

  // New graph with the nodes for which keep(index) is true, their edges among each
  // other, the conditional edges whose two endpoints are kept, and the templates.
  Graph Retain(const std::function<bool(NodeIndex)>& keep) const;

 private:
  static uint64_t Key(NodeIndex from, NodeIndex to) { return (uint64_t{from} << 32) | to; }
  void AddEdgeUnchecked(NodeIndex from, NodeIndex to);
  void CompactEdgeLog();
  // Pearce-Kelly: restores the topological order after inserting from->to where
  // ord_[to] < ord_[from]. Returns false and fills `cycle` if `to` reaches `from`.
  bool Reorder(NodeIndex from, NodeIndex to, std::vector<NodeIndex>* cycle);
  std::string DescribeCycle(const std::vector<NodeIndex>& cycle) const;
  // Recomputes ord_ from scratch; returns a cycle (empty if none).
  std::vector<NodeIndex> RecomputeOrder();

  std::vector<Node> nodes_;
  // Transparent: Find(string_view) looks up without making a string.
  struct VersionHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, NodeIndex, VersionHash, std::equal_to<>> by_version_;
  std::vector<std::vector<NodeIndex>> out_, in_;
  std::vector<Edge> edge_log_;                         // insertion order, may hold dead slots
  std::vector<char> edge_alive_;                       // parallel to edge_log_
  std::unordered_map<uint64_t, uint32_t> edge_slot_;   // live edge -> position in edge_log_
  std::vector<uint64_t> ord_;                          // a topological order of the nodes
  uint64_t next_ord_ = 0;
  // Scratch space for Reorder(), sized like nodes_.
  std::vector<uint32_t> mark_;
  std::vector<NodeIndex> parent_;
  uint32_t epoch_ = 0;
  std::vector<ConditionalEdge> conditional_edges_;
  bool conditional_edges_present_ = true;
  bool served_view_ = false;
  std::vector<RiskTemplate> risk_templates_;
};

}  // namespace cincinnati
