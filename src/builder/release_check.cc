#include "builder/release_check.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include "core/internal_metadata.h"
#include "core/semver.h"
#include "core/strings.h"

namespace cincinnati {
namespace {

// The same reading edge-add-remove does: trimmed items, each SemVer when the release
// has an arch (every scraped or loaded release does).
Status CheckVersionList(std::string_view key, std::string_view value, bool versioned) {
  if (!versioned) return Status::OK();
  for (std::string_view raw : Split(value, ',')) {
    std::string_view item = TrimWhitespace(raw);
    if (auto v = Version::Parse(item); !v.ok()) {
      return Status::InvalidArgument(fmt::format("{}: '{}' is not a SemVer version", key, item));
    }
  }
  return Status::OK();
}

void Reject(std::string_view version, const Status& why, TransformContext& context) {
  context.diagnostics.Warn(std::string(version), "release left out of the graph: " + why.message());
  ++context.rejected_releases;
}

}  // namespace

Status CheckReleaseMetadata(const Metadata& metadata, std::string_view prefix) {
  for (const auto& [key, value] : metadata) {
    if (IsReservedKey(key, prefix)) {
      return Status::InvalidArgument(fmt::format("metadata key '{}' is reserved for the graph builder", key));
    }
  }
  auto arch = metadata.find(std::string(kArchKey));
  const bool versioned = arch != metadata.end();
  if (versioned && !ParseIdentifiers(arch->second).ok()) {
    return Status::InvalidArgument(fmt::format("{}: invalid arch '{}'", kArchKey, arch->second));
  }
  for (std::string_view suffix : {kPreviousAddSuffix, kNextAddSuffix, kPreviousRemoveSuffix, kNextRemoveSuffix}) {
    const std::string key = PrefixedKey(prefix, suffix);
    auto it = metadata.find(key);
    if (it == metadata.end()) continue;
    // The remove-all value of previous.remove is not a list.
    if (suffix == kPreviousRemoveSuffix && TrimWhitespace(it->second) == "*") continue;
    CINCINNATI_RETURN_IF_ERROR(CheckVersionList(key, it->second, versioned));
  }
  const std::string regex_key = PrefixedKey(prefix, kPreviousRemoveRegexSuffix);
  if (auto it = metadata.find(regex_key); it != metadata.end()) {
    RE2 re(it->second, RE2::Quiet);
    if (!re.ok()) return Status::InvalidArgument(fmt::format("{}: invalid regex '{}': {}", regex_key, it->second, re.error()));
  }
  return Status::OK();
}

std::vector<Release> KeepUsableReleases(std::vector<Release> releases, TransformContext& context) {
  std::vector<Release> kept;
  kept.reserve(releases.size());
  for (Release& r : releases) {
    if (Status st = CheckReleaseMetadata(r.metadata); !st.ok()) {
      Reject(r.version.ToString(), st, context);
      continue;
    }
    kept.push_back(std::move(r));
  }
  return kept;
}

Graph KeepUsableNodes(Graph graph, TransformContext& context) {
  std::vector<char> keep(graph.node_count(), 1);
  bool all = true;
  for (NodeIndex i = 0; i < graph.node_count(); ++i) {
    const Node& n = graph.node(i);
    if (!n.concrete) continue;
    if (Status st = CheckReleaseMetadata(n.metadata); !st.ok()) {
      Reject(n.version, st, context);
      keep[i] = 0;
      all = false;
    }
  }
  if (all) return graph;
  return graph.Retain([&](NodeIndex i) { return keep[i] != 0; });
}

}  // namespace cincinnati
