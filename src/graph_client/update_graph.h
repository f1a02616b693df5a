// UpdateGraph: an update service's answer as the cluster-version operator reads it
// (its pkg/cincinnati), which is more lenient than the graph builder's reader in some
// ways and stricter in others:
//   - top-level and object keys match case-insensitively (Go's encoding/json), an exact
//     match winning; unknown keys (such as the policy engine's "version": 1) are ignored;
//   - "nodes": [{version, payload, metadata}], every version strict SemVer, metadata an
//     object that may be absent or null (values of other types than string are kept
//     apart: only the keys that a later step reads must be strings);
//   - "edges": [from, to] index pairs, exactly two integers each, both in range (the Go
//     CVO panics on an out-of-range index; we refuse the answer instead);
//   - "conditionalEdges" (optional): [{edges: [{from, to}], risks: [{url, name, message,
//     matchingRules: [{type, promql: {promql}}]}]}], versions as plain strings.
// Any violation is an error naming the element (nodes[3].version, edges[7], ...): the
// caller reports it as RetrievedUpdates=False, reason ResponseInvalid.
//
// An answer is untrusted, so what it may make a client (the agent, the operator's
// validation) hold is bounded (AnswerLimits): an answer with more nodes, edges,
// conditional edges, risks or rules than the limits is refused as a whole, naming the
// limit, before any of that part is kept. Of each
// node's metadata only the keys the CVO interprets are kept (url, the architecture and
// the channels); the rest is read and dropped. Reading takes up to about 13 bytes of
// memory per byte of the densest answers (simdjson's DOM reserves its structural index
// and tape for the whole document: 833 MiB for 64 MiB of edges, bench/RESULTS.md),
// the graph kept included; the agent's fetcher reads at most 16 MiB by default.
//
// Plain values; ParseUpdateGraph is a pure, thread-safe function that never throws.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/semver.h"
#include "core/status.h"

namespace cincinnati::graph_client {

struct UpdateNode {
  std::string version_text;  // as the answer spelled it
  Version version;
  std::string payload;
  // The interpreted keys only: url, release.openshift.io/architecture and
  // io.openshift.upgrades.graph.release.channels.
  std::map<std::string, std::string> metadata;      // the string values
  std::map<std::string, std::string> non_string;    // other values, as JSON text (at most 1 KiB each)
};

// Unlike core/graph.h's rule, which holds only what a graph builder may emit, this one
// keeps whatever an upstream sent, so that pruning of risks can see unknown types.
struct MatchingRule {
  std::string type;                   // "Always", "PromQL" or anything the answer says
  std::optional<std::string> promql;  // present when the rule had a "promql" member
  bool operator==(const MatchingRule&) const = default;
};

struct Risk {
  std::string url;
  std::string name;
  std::string message;
  std::vector<MatchingRule> matching_rules;
  bool operator==(const Risk&) const = default;
};

struct ConditionalEdgeSet {
  std::vector<std::pair<std::string, std::string>> edges;  // (from, to) version strings
  std::vector<Risk> risks;
};

struct UpdateGraph {
  std::vector<UpdateNode> nodes;
  std::vector<std::pair<size_t, size_t>> edges;
  std::vector<ConditionalEdgeSet> conditional_edges;
};

// The most an answer may hold. The defaults are far beyond any real graph (the whole
// OpenShift graph has about 10,000 releases; a channel's answer a few hundred).
struct AnswerLimits {
  size_t max_nodes = 200'000;
  size_t max_edges = 2'000'000;
  size_t max_conditional_edges = 1'000'000;  // from/to pairs, over every conditionalEdges entry
  size_t max_risks = 100'000;                // over every conditionalEdges entry
  size_t max_rules = 200'000;                // matchingRules, over every risk
};

Result<UpdateGraph> ParseUpdateGraph(std::string_view json, const AnswerLimits& limits = {});

}  // namespace cincinnati::graph_client
