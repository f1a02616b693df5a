// The policy engine's default chain, in one place for the services, the commands that
// answer as the service would (path, explain, graph render, rollout preview), tests and
// benchmarks: channel filter, arch filter, hotfix-filter, channel-target (for the
// `targets` channels), then phased-rollout at `clock`. Also the channels a graph names.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "core/graph.h"
#include "core/metadata_keys.h"
#include "core/transform.h"
#include "policy/phased_rollout.h"

namespace cincinnati::policy {

enum class Phases { kApply, kLeaveOut };  // kLeaveOut: the graph phased-rollout reads

TransformChain DefaultChain(std::set<std::string> targets, std::shared_ptr<const env::Clock> clock,
                            Phases phases = Phases::kApply);

// Every channel named by a release of `graph` (`<prefix>.release.channels`), sorted.
std::set<std::string> ChannelsOf(const Graph& graph, const std::string& key_prefix = std::string(kDefaultKeyPrefix));

}  // namespace cincinnati::policy
