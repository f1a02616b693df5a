// Decoders for the graph-data YAML documents, with the reference's shapes:
//  * channel: {name: string, versions: [semver], target?: semver}; other keys (feeder,
//    tombstones) ignored. A target must be one of the versions.
//  * unconditional blocked edge: exactly {to: semver, from: regex}.
//  * conditional blocked edge (risk): to, from, url, name, message, matchingRules all
//    required; further keys (fixedIn, autoExtend) allowed. Rules are {type: Always} or
//    {type: PromQL, promql: {promql: string}}; other keys of a rule are dropped.
// `from` must compile as an RE2 regex (the reference's dialect is RE2-compatible).
// Errors say which key is wrong and why.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/graph.h"
#include "core/semver.h"
#include "core/status.h"

namespace re2 {
class RE2;
}

namespace cincinnati::graphdata {

struct ChannelDocument {
  std::string name;
  std::vector<Version> versions;
  std::optional<std::string> target_text;  // the optional `target` key, as written
  std::optional<Version> target;           // set by ValidateChannelTarget
};

struct UnconditionalBlock {
  Version to;
  std::string from;
};

struct ConditionalBlock {
  Version to;
  std::string from;
  Risk risk;
};

Result<ChannelDocument> DecodeChannel(const YAML::Node& doc);
// A channel's `target` must be SemVer and one of its versions; sets `target`. Target
// problems are errors even where other channel problems are tolerated: the feature is
// new, so no graph-data depends on leniency.
Status ValidateChannelTarget(ChannelDocument& channel);
Result<UnconditionalBlock> DecodeUnconditionalBlock(const YAML::Node& doc);
Result<ConditionalBlock> DecodeConditionalBlock(const YAML::Node& doc);

// Checks that `pattern` compiles; the error quotes the pattern and RE2's reason.
Status ValidateRegex(const std::string& pattern);

// `pattern` compiled (RE2 defaults, errors as ValidateRegex's). Compiled patterns are
// shared from a process-wide cache of at most 4096 (emptied when full): blocked edges
// repeat a few patterns hundreds of times, and loading graph-data then applying it
// would compile each twice per build. Thread-safe.
Result<std::shared_ptr<const re2::RE2>> CompileRegex(const std::string& pattern);

}  // namespace cincinnati::graphdata
