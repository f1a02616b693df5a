// The policy engine's worker pools (fetches, directory lookups) and its cache of laid-out
// views: private to its .cc files.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <boost/asio/thread_pool.hpp>

#include "server/policy_engine_service.h"

namespace cincinnati::server {

struct PolicyEngineService::Pool {
  explicit Pool(size_t n) : pool(n) {}
  boost::asio::thread_pool pool;
};

// SVG per (channel, arch, blocked) for one graph; emptied when the graph changes or the
// cache is full. Rendering happens outside the lock.
struct PolicyEngineService::SvgCache {
  static constexpr size_t kMaxEntries = 256;
  std::mutex mu;
  std::shared_ptr<const Graph> graph;
  std::map<std::string, std::shared_ptr<const std::string>> svgs;
};

}  // namespace cincinnati::server
