// CheckServable: the last gate before a graph is published to clients.
//
// A client (the cluster-version operator) trusts what it is served: an out-of-range edge
// index or a version it cannot parse breaks every cluster polling at once. So both the
// graph builder (after its plugin chain) and the policy engine (after reading its
// upstream) run this check on a new graph and refuse to publish one that fails it,
// keeping the last good graph. It requires:
//   - unique, strict SemVer 2.0.0 node versions;
//   - edge indices in range, no self-loop;
//   - valid UTF-8 in every version, payload and metadata key and value (metadata values
//     are strings by construction);
//   - conditional edges whose endpoints are nodes of the graph, each group with at least
//     one edge and one risk, each risk with a name and at least one matching rule;
//   - internal metadata (phased starts and rules, hotfix rules; core/internal_metadata.h)
//     that decodes, so no policy step meets a value it cannot read.
// The message names the first offending node, edge or risk. O(nodes + edges + metadata).
#pragma once

#include <string_view>

#include "core/graph.h"
#include "core/metadata_keys.h"
#include "core/status.h"

namespace cincinnati {

Status CheckServable(const Graph& graph, std::string_view key_prefix = kDefaultKeyPrefix);

}  // namespace cincinnati
