// The policy engine's cache of laid-out views (the graph page's pictures): private to
// its .cc files.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "policy_engine/policy_engine_service.h"

namespace cincinnati::server {

// SVG per (channel, arch, blocked) for one graph; emptied when the graph changes or the
// cache is full. Rendering happens outside the lock.
struct PolicyEngineService::SvgCache {
  static constexpr size_t kMaxEntries = 256;
  std::mutex mu;
  std::shared_ptr<const Graph> graph;
  std::map<std::string, std::shared_ptr<const std::string>> svgs;
};

}  // namespace cincinnati::server
