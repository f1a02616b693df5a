// Which releases the graph builder takes into its graph.
//
// A release's own metadata (its release-metadata document, a registry image's, or a
// node of a raw graph file) may carry the reference's directives (previous.add,
// next.add, previous.remove, next.remove, previous.remove_regex, release.remove) and
// any passthrough key, but not a key the graph builder reserves for itself
// (core/internal_metadata.h: phased rollouts, hotfix rules, channel targets), and its
// directives must be usable by edge-add-remove: SemVer version lists (or the
// remove-all value), an RE2 pattern, a valid arch.
// A release that fails is left out of the graph, not patched: ignoring only its bad
// directive could serve an edge it meant to remove. Each one is named in a warning and
// counted in TransformContext::rejected_releases; the rest of the graph publishes.
// Pure functions, thread-safe.
#pragma once

#include <string_view>
#include <vector>

#include "builder/raw_graph.h"
#include "core/graph.h"
#include "core/metadata_keys.h"
#include "core/status.h"
#include "core/transform.h"

namespace cincinnati {

// Whether one release's metadata may enter the graph; the error names the key.
Status CheckReleaseMetadata(const Metadata& metadata, std::string_view key_prefix = kDefaultKeyPrefix);

// `releases` without those that fail CheckReleaseMetadata, reported in `context`.
std::vector<Release> KeepUsableReleases(std::vector<Release> releases, TransformContext& context);
// The same for the concrete nodes of a raw graph file (their edges go with them).
Graph KeepUsableNodes(Graph graph, TransformContext& context);

}  // namespace cincinnati
