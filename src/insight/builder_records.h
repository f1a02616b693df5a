// BuilderRecords: what the graph builder wrote down about edges it did not keep, read
// back from a graph builder's graph (core/internal_metadata.h: blocked.by,
// removed.previous, removed.next) and put into words.
//
// Versions are given as a served view names them (the arch stripped); a builder graph
// with "+arch" builds is matched for the request's arch. Pure and total: keys that do
// not decode are skipped (a served graph was checked by CheckServable before).
// Thread-safe for concurrent const use.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/internal_metadata.h"
#include "core/metadata_keys.h"

namespace cincinnati::insight {

// The node of `graph` that a view for `arch` calls `version`: the exact version, or
// "version+arch" in a multi-arch builder graph.
std::optional<NodeIndex> FindRelease(const Graph& graph, std::string_view version, std::string_view arch);
// The version a view for `arch` shows for a builder graph's version ("4.1.0+amd64" -> "4.1.0").
std::string ViewVersion(std::string_view version, std::string_view arch);

// Why the builder graph has no edge from -> to, when it removed one.
struct EdgeRemoval {
  std::string from, to;  // view versions
  std::string cause;     // the key suffix that removed it: previous.remove_regex, previous.remove, next.remove
  std::vector<BlockRecord> blocks;  // the blocked-edges rules that match `from` (remove_regex only)
  // "blocked by blocked-edges/4.13.2.yaml (from: 4\.12\..*)" and the like.
  std::string Describe() const;
};

class BuilderRecords {
 public:
  BuilderRecords(const Graph& builder_graph, std::string arch, std::string key_prefix = std::string(kDefaultKeyPrefix));

  // The removal of from -> to, if the builder removed that edge.
  std::optional<EdgeRemoval> Removal(std::string_view from, std::string_view to) const;
  // Every removed edge into a release of this arch (decoded on the first call: a
  // single edge's question only decodes its target's records).
  const std::vector<EdgeRemoval>& removals() const;
  // The removed edges into `to` (a view version), decoded on each call: a path's
  // question reads only the releases of its channels, and only when it finds no path.
  std::vector<EdgeRemoval> RemovalsInto(std::string_view to) const;
  // The blocked-edges rules recorded on `to` whose regex matches `from` (conditional
  // blocks name the file that made a risk).
  std::vector<BlockRecord> BlocksMatching(std::string_view from, std::string_view to) const;
  // Whether node-remove (release.remove) took this version out of the graph (read on
  // the first call).
  bool RemovedRelease(std::string_view version) const;

 private:
  bool ThisArch(const Node& node) const;
  std::vector<EdgeRemoval> RemovalsIntoNode(const Node& node) const;

  const Graph& graph_;
  std::string arch_, blocked_key_, removed_key_, removed_next_key_;
  mutable std::once_flag removed_releases_once_;
  mutable std::vector<std::string> removed_releases_;  // sorted view versions
  mutable std::once_flag all_once_;
  mutable std::vector<EdgeRemoval> all_;
};

}  // namespace cincinnati::insight
