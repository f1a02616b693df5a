#include "policy/default_chain.h"

#include "core/strings.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"
#include "policy/channel_target.h"
#include "policy/hotfix_filter.h"

namespace cincinnati::policy {

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
  std::set<std::string> out;
  const std::string key = PrefixedKey(key_prefix, kChannelsSuffix);
  for (const Node& n : graph.nodes()) {
    auto it = n.metadata.find(key);
    if (it == n.metadata.end()) continue;
    for (std::string_view c : Split(it->second, ',')) {
      if (!TrimWhitespace(c).empty()) out.emplace(TrimWhitespace(c));
    }
  }
  return out;
}

}  // namespace cincinnati::policy
