// Metadata keys and run-parameter names shared with the reference (openshift/cincinnati).
#pragma once

#include <string>
#include <string_view>

namespace cincinnati {

inline constexpr std::string_view kDefaultKeyPrefix = "io.openshift.upgrades.graph";
// The arch key name is fixed; it does not follow a configured prefix.
inline constexpr std::string_view kArchKey = "io.openshift.upgrades.graph.release.arch";
inline constexpr std::string_view kManifestRefKey = "io.openshift.upgrades.graph.release.manifestref";
inline constexpr std::string_view kReleaseArchitectureKey = "release.openshift.io/architecture";

// Suffixes appended to "<prefix>." to form a key.
inline constexpr std::string_view kChannelsSuffix = "release.channels";
inline constexpr std::string_view kPreviousAddSuffix = "previous.add";
inline constexpr std::string_view kNextAddSuffix = "next.add";
inline constexpr std::string_view kPreviousRemoveSuffix = "previous.remove";
inline constexpr std::string_view kPreviousRemoveRegexSuffix = "previous.remove_regex";
inline constexpr std::string_view kNextRemoveSuffix = "next.remove";
inline constexpr std::string_view kReleaseRemoveSuffix = "release.remove";
// Phased rollouts (graph-data 2.x), internal between graph builder and policy engine:
// "<channel>=<unix start>,..." and "<channel>:<criterion>=<seconds>,...;..." where the
// criterion is minor, patch, another word (never matches) or * (the default).
inline constexpr std::string_view kPhasedStartSuffix = "phased.start";
// Channels for which a release is the explicit target (graph-data `target`), comma list.
inline constexpr std::string_view kChannelTargetsSuffix = "channel.targets";
inline constexpr std::string_view kPhasedRolloutsSuffix = "phased.rollouts";
// Hotfix releases (graph-data hotfixes/): who may see them, see core/hotfix_rule.h.
inline constexpr std::string_view kHotfixRulesSuffix = "hotfix.rules";
// What explanations need (see core/internal_metadata.h): which graph-data files block
// edges into a release, and which edges the graph builder removed, and why.
inline constexpr std::string_view kBlockedBySuffix = "blocked.by";
inline constexpr std::string_view kRemovedPreviousSuffix = "removed.previous";
inline constexpr std::string_view kRemovedNextSuffix = "removed.next";

inline std::string PrefixedKey(std::string_view prefix, std::string_view suffix) {
  std::string key(prefix);
  key += '.';
  key += suffix;
  return key;
}

// Run parameters passed between graph-builder transforms.
inline constexpr std::string_view kSecondaryMetadataDirectoryParam = "io.openshift.upgrades.secondary_metadata.directory";
inline constexpr std::string_view kSecondaryMetadataTarParam = "io.openshift.upgrades.secondary_metadata.tar";

}  // namespace cincinnati
