// The policy engine's default chain, in one place for the services, the commands that
// answer as the service would (path, explain, graph render, rollout preview), tests and
// benchmarks: channel filter, arch filter, hotfix-filter, channel-target (for the
// `targets` channels), then phased-rollout at `clock`. Also the channels and arches a
// graph names, and the one message every command and route gives for a channel, an
// arch or a release that is not there: what was asked, the nearest name when it looks
// like a typo, and what exists.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/metadata_keys.h"
#include "core/status.h"
#include "core/transform.h"
#include "policy/phased_rollout.h"

namespace cincinnati::policy {

enum class Phases { kApply, kLeaveOut };  // kLeaveOut: the graph phased-rollout reads

TransformChain DefaultChain(std::set<std::string> targets, std::shared_ptr<const env::Clock> clock,
                            Phases phases = Phases::kApply);

// Every channel named by a release of `graph` (`<prefix>.release.channels`), sorted.
std::set<std::string> ChannelsOf(const Graph& graph, const std::string& key_prefix = std::string(kDefaultKeyPrefix));
// Every arch a release of `graph` is built for (`<prefix>.release.arch`), sorted.
std::set<std::string> ArchesOf(const Graph& graph, const std::string& key_prefix = std::string(kDefaultKeyPrefix));

// InvalidParams (the reference's invalid_params, HTTP 400) "unknown channel 'X'; did you mean 'Y'? (channels: ...)" for the first
// of `channels` no release of the builder's `graph` names, the same for `arch`
// ("unknown arch ..."); OK when all are known, or when `graph` names none (a served view
// whose releases carry no channels: nothing to check against).
Status CheckChannelsAndArch(const Graph& graph, const std::vector<std::string>& channels, const std::string& arch,
                            const std::string& key_prefix = std::string(kDefaultKeyPrefix));

// "V is not a release of channel C (arch); its releases: ..." (the `releases` of the
// channel's view, in version order).
std::string NotAReleaseOf(const std::string& version, const std::string& channel, const std::string& arch,
                     const std::vector<std::string>& releases);

}  // namespace cincinnati::policy
