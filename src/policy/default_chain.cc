#include "policy/default_chain.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/nearest_name.h"
#include "core/strings.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"
#include "policy/channel_target.h"
#include "policy/hotfix_filter.h"

namespace cincinnati::policy {

namespace {

// Every name listed (comma-separated) under metadata `key` of a release of `graph`.
std::set<std::string> ListedIn(const Graph& graph, const std::string& key) {
  std::set<std::string> out;
  for (const Node& n : graph.nodes()) {
    auto it = n.metadata.find(key);
    if (it == n.metadata.end()) continue;
    for (std::string_view name : Split(it->second, ',')) {
      if (!TrimWhitespace(name).empty()) out.emplace(TrimWhitespace(name));
    }
  }
  return out;
}

}  // namespace

TransformChain DefaultChain(std::set<std::string> targets, std::shared_ptr<const env::Clock> clock, Phases phases) {
  TransformChain chain;
  chain.push_back(std::make_unique<ChannelFilter>());
  chain.push_back(std::make_unique<ArchFilter>());
  chain.push_back(std::make_unique<HotfixFilter>());
  chain.push_back(std::make_unique<ChannelTarget>(std::move(targets)));
  if (phases == Phases::kApply) chain.push_back(std::make_unique<PhasedRollout>(std::move(clock)));
  return chain;
}

std::set<std::string> ChannelsOf(const Graph& graph, const std::string& key_prefix) {
  return ListedIn(graph, PrefixedKey(key_prefix, kChannelsSuffix));
}

std::set<std::string> ArchesOf(const Graph& graph, const std::string& key_prefix) {
  return ListedIn(graph, PrefixedKey(key_prefix, "release.arch"));
}

namespace {

Status Unknown(std::string_view what, std::string_view plural, const std::string& name, const std::set<std::string>& known) {
  const std::vector<std::string> names(known.begin(), known.end());
  const std::optional<std::string> nearest = NearestName(name, names);
  return Status::InvalidParams(fmt::format("unknown {} '{}'{} ({}: {})", what, name,
                                           nearest ? fmt::format("; did you mean '{}'?", *nearest) : "", plural,
                                           fmt::join(names, ", ")));
}

}  // namespace

Status CheckChannelsAndArch(const Graph& graph, const std::vector<std::string>& channels, const std::string& arch,
                            const std::string& key_prefix) {
  const std::set<std::string> known_channels = ChannelsOf(graph, key_prefix);
  if (!known_channels.empty()) {
    for (const std::string& c : channels) {
      if (!known_channels.count(c)) return Unknown("channel", "channels", c, known_channels);
    }
  }
  const std::set<std::string> known_arches = ArchesOf(graph, key_prefix);
  if (!known_arches.empty() && !known_arches.count(arch)) return Unknown("arch", "arches", arch, known_arches);
  return Status::OK();
}

std::string NotAReleaseOf(const std::string& version, const std::string& channel, const std::string& arch,
                          const std::vector<std::string>& releases) {
  return fmt::format("{} is not a release of channel {} ({}); its releases: {}", version, channel, arch,
                     releases.empty() ? std::string("none") : fmt::format("{}", fmt::join(releases, ", ")));
}

}  // namespace cincinnati::policy
