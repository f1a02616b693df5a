// Who may see a hotfix release: the graph builder writes the rules of graph-data
// `hotfixes/` on each hotfix release's node (key "<prefix>.hotfix.rules"), and the
// policy engine reads them back. A rule applies to a cluster whose customer is listed
// or whose labels match one selector (every key=value of it); it makes the release
// visible in the rule's channels only.
//
// Wire form: rules ';'-separated, each "name|channel,...|customer,...|selector ...",
// a selector "key=value&key=value". Every name, channel, customer, key and value is a
// HotfixToken, so the separators never appear inside one.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/status.h"

namespace cincinnati {

struct HotfixRule {
  std::string name;
  std::vector<std::string> channels;
  std::vector<std::string> customers;
  std::vector<std::map<std::string, std::string>> selectors;

  bool AppliesTo(const ClusterInfo& cluster) const;
  bool InChannel(std::string_view channel) const;
  bool operator==(const HotfixRule&) const = default;
};

// Non-empty, of [A-Za-z0-9._:@/+-]. Label values may also be empty.
bool IsHotfixToken(std::string_view text);

std::string EncodeHotfixRule(const HotfixRule& rule);
// Total and strict: an entry that EncodeHotfixRule could not have written is an error
// naming it (the value comes from an upstream graph, which is untrusted).
Result<std::vector<HotfixRule>> DecodeHotfixRules(std::string_view encoded);

}  // namespace cincinnati
