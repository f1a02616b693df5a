// Internal node metadata: what the graph builder writes on nodes for the policy engine,
// under "<prefix>.<suffix>" for the reserved suffixes below, with its encoders and
// total decoders.
//
// Wire forms (metadata values are plain strings in the graph JSON):
//   phased.start     "<channel>=<unix seconds>,..."                 one item per channel
//   phased.rollouts  "<channel>:<criterion>=<seconds>,...;..."       one block per channel;
//                    criterion minor, patch, * (the default) or another word (never matches)
//   channel.targets  "<channel>,..."                                 channels the release is the target of
//   hotfix.rules     see core/hotfix_rule.h
//   blocked.by       "<u|c>:<file>=<from regex>;..."                 the blocked-edges files whose rule
//                    is in the release's previous.remove_regex (u: unconditional, c: conditional);
//                    '%', ';', ':' and '=' inside a file name, and '%' and ';' inside a regex,
//                    are written %25, %3B, %3A, %3D
//   removed.previous "<version>=<cause>,..."                         edges into the release that
//                    edge-add-remove removed; cause is the suffix of the key that removed it
//   removed.next     "<version>,..."                                 successors removed by node-remove
//                    (release.remove)
// The last three exist for explanations; they leave the graph builder apart from its graph
// (core/graph_records.h), and a policy engine never answers with them (StripExplanationKeys).
// The graph builder reserves these keys: a release's own metadata may not set them
// (builder/release_check.h), and a graph whose values do not decode is never served
// (CheckServable names the node and the key). Decoders never throw; an error names the
// offending item. Times are bounded to the years 1-9999 and windows to 0-100 years, so
// a start plus a window never overflows. Pure functions, thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/metadata_keys.h"
#include "core/status.h"

namespace cincinnati {

inline constexpr std::array<std::string_view, 7> kReservedSuffixes = {
    kPhasedStartSuffix, kPhasedRolloutsSuffix, kChannelTargetsSuffix, kHotfixRulesSuffix,
    kBlockedBySuffix,   kRemovedPreviousSuffix, kRemovedNextSuffix};
inline constexpr std::array<std::string_view, 3> kExplanationSuffixes = {kBlockedBySuffix, kRemovedPreviousSuffix,
                                                                        kRemovedNextSuffix};
// Whether `key` is "<prefix>.<reserved suffix>".
bool IsReservedKey(std::string_view key, std::string_view prefix = kDefaultKeyPrefix);

inline constexpr int64_t kEarliestTime = -62135596800;  // 0001-01-01T00:00:00Z
inline constexpr int64_t kLatestTime = 253402300799;    // 9999-12-31T23:59:59Z
inline constexpr int64_t kLongestWindow = 100LL * 366 * 86400;

struct ChannelStart {
  std::string channel;
  int64_t start = 0;  // Unix seconds
  bool operator==(const ChannelStart&) const = default;
};
// "<channel>=<start>": one item of a phased.start value.
std::string EncodeChannelStart(std::string_view channel, int64_t start);
Result<std::vector<ChannelStart>> DecodePhasedStarts(std::string_view value);

struct RolloutRule {
  std::string criterion;  // "minor", "patch", "*" or another word
  int64_t seconds = 0;
  bool operator==(const RolloutRule&) const = default;
};
struct ChannelRollouts {
  std::string channel;
  std::vector<RolloutRule> rules;
  bool operator==(const ChannelRollouts&) const = default;
};
// One block of a phased.rollouts value; "" when the channel has no rules.
std::string EncodeChannelRollouts(const ChannelRollouts& rollouts);
Result<std::vector<ChannelRollouts>> DecodePhasedRollouts(std::string_view value);

// One item of a blocked.by value.
struct BlockRecord {
  bool conditional = false;
  std::string file;        // relative to the graph-data root
  std::string from_regex;  // the rule's `from`
  bool operator==(const BlockRecord&) const = default;
};
std::string EncodeBlockRecord(const BlockRecord& record);
Result<std::vector<BlockRecord>> DecodeBlockRecords(std::string_view value);

// One item of a removed.previous value.
struct RemovedEdge {
  std::string from;   // the predecessor's version, as in the graph
  std::string cause;  // previous.remove_regex, previous.remove or next.remove
  bool operator==(const RemovedEdge&) const = default;
};
std::string EncodeRemovedEdge(const RemovedEdge& edge);
Result<std::vector<RemovedEdge>> DecodeRemovedEdges(std::string_view value);

// Whether any node carries an explanation key, and a copy of the graph without them
// (what a policy engine answers from).
bool HasExplanationKeys(const Graph& graph, std::string_view prefix = kDefaultKeyPrefix);
Graph StripExplanationKeys(const Graph& graph, std::string_view prefix = kDefaultKeyPrefix);

// Decodes every reserved key of `metadata`; the error names the key.
Status CheckInternalMetadata(const Metadata& metadata, std::string_view prefix = kDefaultKeyPrefix);

}  // namespace cincinnati
