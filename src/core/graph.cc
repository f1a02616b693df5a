#include "core/graph.h"

#include <algorithm>

#include <fmt/format.h>

namespace cincinnati {
namespace {

void EraseOne(std::vector<NodeIndex>& v, NodeIndex x) {
  auto it = std::find(v.begin(), v.end(), x);
  if (it != v.end()) {
    *it = v.back();
    v.pop_back();
  }
}

}  // namespace

std::optional<NodeIndex> Graph::Find(std::string_view version) const {
  auto it = by_version_.find(version);
  if (it == by_version_.end()) return std::nullopt;
  return it->second;
}

Result<NodeIndex> Graph::AddNode(Node node) {
  if (node.version.empty()) return Status::InvalidArgument("node version must not be empty");
  if (by_version_.count(node.version)) {
    return Status::Conflict(fmt::format("duplicate node version '{}'", node.version));
  }
  NodeIndex i = static_cast<NodeIndex>(nodes_.size());
  by_version_.emplace(node.version, i);
  nodes_.push_back(std::move(node));
  out_.emplace_back();
  in_.emplace_back();
  ord_.push_back(next_ord_++);
  mark_.push_back(0);
  parent_.push_back(0);
  return i;
}

Status Graph::ReplaceNode(NodeIndex i, Node node) {
  if (node.version != nodes_[i].version) {
    CINCINNATI_RETURN_IF_ERROR(RenameNode(i, node.version));
  }
  nodes_[i] = std::move(node);
  return Status::OK();
}

Status Graph::RenameNode(NodeIndex i, std::string version) {
  if (version == nodes_[i].version) return Status::OK();
  if (version.empty()) return Status::InvalidArgument("node version must not be empty");
  if (by_version_.count(version)) {
    return Status::Conflict(
        fmt::format("cannot rename '{}' to '{}': version exists", nodes_[i].version, version));
  }
  by_version_.erase(nodes_[i].version);
  by_version_.emplace(version, i);
  nodes_[i].version = std::move(version);
  return Status::OK();
}

Status Graph::RenameAll(std::vector<std::string> versions) {
  if (versions.size() != nodes_.size()) return Status::Internal("RenameAll: one version per node required");
  decltype(by_version_) index;
  index.reserve(versions.size());
  for (NodeIndex i = 0; i < versions.size(); ++i) {
    if (versions[i].empty()) return Status::InvalidArgument("node version must not be empty");
    if (!index.emplace(versions[i], i).second) {
      return Status::Conflict(fmt::format("'{}' and '{}' would both become '{}'", nodes_[index[versions[i]]].version,
                                          nodes_[i].version, versions[i]));
    }
  }
  for (NodeIndex i = 0; i < versions.size(); ++i) nodes_[i].version = std::move(versions[i]);
  by_version_ = std::move(index);
  return Status::OK();
}

bool Graph::HasEdge(NodeIndex from, NodeIndex to) const { return edge_slot_.count(Key(from, to)) != 0; }

void Graph::AddEdgeUnchecked(NodeIndex from, NodeIndex to) {
  edge_slot_.emplace(Key(from, to), static_cast<uint32_t>(edge_log_.size()));
  edge_log_.push_back(Edge{from, to});
  edge_alive_.push_back(1);
  out_[from].push_back(to);
  in_[to].push_back(from);
}

Status Graph::AddEdge(NodeIndex from, NodeIndex to) {
  if (from >= nodes_.size() || to >= nodes_.size()) {
    return Status::InvalidArgument(fmt::format("edge [{}, {}] references a node index out of range (graph has {} nodes)",
                                               from, to, nodes_.size()));
  }
  if (from == to) {
    return Status::Cycle(fmt::format("edge {} -> {} would create a cycle: {} -> {}", nodes_[from].version,
                                     nodes_[to].version, nodes_[from].version, nodes_[to].version));
  }
  if (HasEdge(from, to)) return Status::OK();
  if (ord_[from] > ord_[to]) {
    std::vector<NodeIndex> cycle;
    if (!Reorder(from, to, &cycle)) {
      return Status::Cycle(fmt::format("edge {} -> {} would create a cycle: {}", nodes_[from].version,
                                       nodes_[to].version, DescribeCycle(cycle)));
    }
  }
  AddEdgeUnchecked(from, to);
  return Status::OK();
}

bool Graph::Reorder(NodeIndex u, NodeIndex v, std::vector<NodeIndex>* cycle) {
  const uint64_t lb = ord_[v], ub = ord_[u];
  const uint32_t forward = ++epoch_;
  const uint32_t backward = ++epoch_;

  // Forward search from v among nodes ordered before u: reaching u means a cycle.
  std::vector<NodeIndex> delta_f, stack{v};
  mark_[v] = forward;
  while (!stack.empty()) {
    NodeIndex w = stack.back();
    stack.pop_back();
    delta_f.push_back(w);
    for (NodeIndex s : out_[w]) {
      if (s == u) {
        // The cycle is u -> v -> ... -> w -> u.
        std::vector<NodeIndex> path;
        for (NodeIndex x = w; x != v; x = parent_[x]) path.push_back(x);
        path.push_back(v);
        path.push_back(u);
        std::reverse(path.begin(), path.end());
        *cycle = std::move(path);
        return false;
      }
      if (ord_[s] < ub && mark_[s] != forward) {
        mark_[s] = forward;
        parent_[s] = w;
        stack.push_back(s);
      }
    }
  }
  // Backward search from u among nodes ordered after v.
  std::vector<NodeIndex> delta_b;
  stack.push_back(u);
  mark_[u] = backward;
  while (!stack.empty()) {
    NodeIndex w = stack.back();
    stack.pop_back();
    delta_b.push_back(w);
    for (NodeIndex p : in_[w]) {
      if (ord_[p] > lb && mark_[p] != backward) {
        mark_[p] = backward;
        stack.push_back(p);
      }
    }
  }
  auto by_ord = [this](NodeIndex a, NodeIndex b) { return ord_[a] < ord_[b]; };
  std::sort(delta_b.begin(), delta_b.end(), by_ord);
  std::sort(delta_f.begin(), delta_f.end(), by_ord);
  std::vector<uint64_t> slots;
  slots.reserve(delta_b.size() + delta_f.size());
  for (NodeIndex n : delta_b) slots.push_back(ord_[n]);
  for (NodeIndex n : delta_f) slots.push_back(ord_[n]);
  std::sort(slots.begin(), slots.end());
  size_t k = 0;
  for (NodeIndex n : delta_b) ord_[n] = slots[k++];
  for (NodeIndex n : delta_f) ord_[n] = slots[k++];
  return true;
}

std::string Graph::DescribeCycle(const std::vector<NodeIndex>& cycle) const {
  std::string out;
  for (NodeIndex n : cycle) {
    out += nodes_[n].version;
    out += " -> ";
  }
  out += nodes_[cycle.front()].version;
  return out;
}

Status Graph::AddEdges(const std::vector<Edge>& edges) {
  std::vector<Edge> added;
  added.reserve(edges.size());
  edge_slot_.reserve(edge_slot_.size() + edges.size());
  for (const Edge& e : edges) {
    if (e.from >= nodes_.size() || e.to >= nodes_.size()) {
      for (const Edge& a : added) RemoveEdge(a.from, a.to);
      return Status::InvalidArgument(fmt::format(
          "edge [{}, {}] references a node index out of range (graph has {} nodes)", e.from, e.to, nodes_.size()));
    }
    if (HasEdge(e.from, e.to)) continue;
    AddEdgeUnchecked(e.from, e.to);
    added.push_back(e);
  }
  std::vector<NodeIndex> cycle = RecomputeOrder();
  if (cycle.empty()) return Status::OK();
  std::string description = DescribeCycle(cycle);
  for (const Edge& a : added) RemoveEdge(a.from, a.to);
  RecomputeOrder();
  return Status::Cycle("edges would create a cycle: " + description);
}

std::vector<NodeIndex> Graph::RecomputeOrder() {
  const size_t n = nodes_.size();
  std::vector<uint32_t> indegree(n);
  for (size_t i = 0; i < n; ++i) indegree[i] = static_cast<uint32_t>(in_[i].size());
  std::vector<NodeIndex> queue;
  for (NodeIndex i = 0; i < n; ++i) {
    if (indegree[i] == 0) queue.push_back(i);
  }
  uint64_t next = 0;
  for (size_t head = 0; head < queue.size(); ++head) {
    NodeIndex w = queue[head];
    ord_[w] = next++;
    for (NodeIndex s : out_[w]) {
      if (--indegree[s] == 0) queue.push_back(s);
    }
  }
  next_ord_ = std::max(next_ord_, next);
  if (queue.size() == n) return {};
  // Every node left has a predecessor that is also left: walk backwards until a
  // node repeats; the walk between the repeats is a cycle (in reverse).
  NodeIndex start = 0;
  while (indegree[start] == 0) ++start;
  const uint32_t seen = ++epoch_;
  std::vector<NodeIndex> walk;
  NodeIndex x = start;
  while (mark_[x] != seen) {
    mark_[x] = seen;
    walk.push_back(x);
    for (NodeIndex p : in_[x]) {
      if (indegree[p] != 0) {
        x = p;
        break;
      }
    }
  }
  auto first = std::find(walk.begin(), walk.end(), x);
  std::vector<NodeIndex> cycle(first, walk.end());
  std::reverse(cycle.begin(), cycle.end());
  // Rotate so the reported cycle starts at its smallest index (stable messages).
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  // Nodes left over keep their old order values; only the (failing) caller sees them.
  return cycle;
}

bool Graph::RemoveEdge(NodeIndex from, NodeIndex to) {
  auto it = edge_slot_.find(Key(from, to));
  if (it == edge_slot_.end()) return false;
  edge_alive_[it->second] = 0;
  edge_slot_.erase(it);
  EraseOne(out_[from], to);
  EraseOne(in_[to], from);
  if (edge_log_.size() > 1024 && edge_slot_.size() * 2 < edge_log_.size()) CompactEdgeLog();
  return true;
}

void Graph::CompactEdgeLog() {
  std::vector<Edge> log;
  log.reserve(edge_slot_.size());
  for (size_t i = 0; i < edge_log_.size(); ++i) {
    if (!edge_alive_[i]) continue;
    edge_slot_[Key(edge_log_[i].from, edge_log_[i].to)] = static_cast<uint32_t>(log.size());
    log.push_back(edge_log_[i]);
  }
  edge_log_ = std::move(log);
  edge_alive_.assign(edge_log_.size(), 1);
}

std::vector<Edge> Graph::Edges() const {
  std::vector<Edge> out;
  out.reserve(edge_slot_.size());
  for (size_t i = 0; i < edge_log_.size(); ++i) {
    if (edge_alive_[i]) out.push_back(edge_log_[i]);
  }
  return out;
}

void Graph::FilterConditionalEdges(const std::function<bool(const ConditionalEdgeRef&)>& keep) {
  for (ConditionalEdge& group : conditional_edges_) {
    std::erase_if(group.edges, [&](const ConditionalEdgeRef& ref) { return !keep(ref); });
  }
  std::erase_if(conditional_edges_, [](const ConditionalEdge& group) { return group.edges.empty(); });
}

Graph Graph::Retain(const std::function<bool(NodeIndex)>& keep) const {
  constexpr NodeIndex kDropped = UINT32_MAX;
  Graph g;
  std::vector<NodeIndex> remap(nodes_.size(), kDropped);
  for (NodeIndex i = 0; i < nodes_.size(); ++i) {
    if (!keep(i)) continue;
    remap[i] = static_cast<NodeIndex>(g.nodes_.size());
    g.by_version_.emplace(nodes_[i].version, remap[i]);
    g.nodes_.push_back(nodes_[i]);
    g.out_.emplace_back();
    g.in_.emplace_back();
    g.ord_.push_back(ord_[i]);  // a sub-order of a topological order stays one
    g.mark_.push_back(0);
    g.parent_.push_back(0);
  }
  g.next_ord_ = next_ord_;
  // Edges among kept nodes, in insertion order. A small selection (a channel of a big
  // graph) walks the kept nodes' adjacency; a large one scans the edge log.
  std::vector<uint32_t> slots;
  if (g.nodes_.size() * 4 < nodes_.size()) {
    for (NodeIndex i = 0; i < nodes_.size(); ++i) {
      if (remap[i] == kDropped) continue;
      for (NodeIndex t : out_[i]) {
        if (remap[t] != kDropped) slots.push_back(edge_slot_.at(Key(i, t)));
      }
    }
    std::sort(slots.begin(), slots.end());
  } else {
    for (uint32_t i = 0; i < edge_log_.size(); ++i) {
      if (edge_alive_[i] && remap[edge_log_[i].from] != kDropped && remap[edge_log_[i].to] != kDropped) {
        slots.push_back(i);
      }
    }
  }
  for (uint32_t slot : slots) g.AddEdgeUnchecked(remap[edge_log_[slot].from], remap[edge_log_[slot].to]);
  for (const ConditionalEdge& group : conditional_edges_) {
    ConditionalEdge kept;
    for (const ConditionalEdgeRef& ref : group.edges) {
      if (g.by_version_.count(ref.from) && g.by_version_.count(ref.to)) kept.edges.push_back(ref);
    }
    if (kept.edges.empty()) continue;
    kept.risks = group.risks;
    g.conditional_edges_.push_back(std::move(kept));
  }
  g.conditional_edges_present_ = conditional_edges_present_;
  g.served_view_ = served_view_;
  g.risk_templates_ = risk_templates_;
  return g;
}

}  // namespace cincinnati
