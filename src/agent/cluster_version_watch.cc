#include "agent/cluster_version_watch.h"

#include <utility>
#include <vector>

#include "env/clock.h"

namespace cincinnati::agent {
using kube::JsonObject;

ClusterVersionWatches::ClusterVersionWatches(std::function<kube::JsonValue()> current, int64_t resource_version, size_t max_watches)
    : current_(std::move(current)), max_watches_(max_watches), resource_version_(resource_version), thread_([this] { Loop(); }) {}

ClusterVersionWatches::~ClusterVersionWatches() {
  EndAll();
  thread_.join();
}

http_server::Response ClusterVersionWatches::Event() {
  kube::JsonValue event = kube::JsonValue(JsonObject({{"type", kube::JsonValue("MODIFIED")}, {"object", current_()}}));
  return http_server::Response::Text(200, kube::WriteJson(event) + "\n", "application/json");
}

void ClusterVersionWatches::Wait(std::optional<int64_t> seen, std::chrono::seconds timeout, Respond respond) {
  {
    std::lock_guard lock(mu_);
    if (seen && *seen == resource_version_ && !stopping_ && watches_.size() < max_watches_) {
      watches_.push_back({*seen, env::RealClock().Steady() + timeout, std::move(respond)});
      wake_.notify_all();
      return;
    }
  }
  respond(Event());  // changed already, no version to compare, shutting down or full: a poll
}

void ClusterVersionWatches::Changed(int64_t resource_version) {
  std::lock_guard lock(mu_);
  resource_version_ = resource_version;
  wake_.notify_all();
}

void ClusterVersionWatches::EndAll() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  wake_.notify_all();
}

size_t ClusterVersionWatches::waiting() {
  std::lock_guard lock(mu_);
  return watches_.size();
}

void ClusterVersionWatches::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    std::vector<Respond> changed, ended;
    // The real clock: the deadlines are waited for with wait_until, in real time.
    const auto now = env::RealClock().Steady();
    auto next = std::chrono::steady_clock::time_point::max();
    for (auto it = watches_.begin(); it != watches_.end();) {
      if (it->seen != resource_version_) {
        changed.push_back(std::move(it->respond));
      } else if (stopping_ || it->deadline <= now) {
        ended.push_back(std::move(it->respond));
      } else {
        next = std::min(next, it->deadline);
        ++it;
        continue;
      }
      it = watches_.erase(it);
    }
    if (!changed.empty() || !ended.empty()) {
      lock.unlock();  // the responders and current_() run without this lock
      if (!changed.empty()) {
        const http_server::Response event = Event();
        for (auto& respond : changed) respond(event);
      }
      for (auto& respond : ended) respond(http_server::Response::Text(200, "", "application/json"));
      lock.lock();
      continue;
    }
    if (stopping_) return;
    if (next == std::chrono::steady_clock::time_point::max()) {
      wake_.wait(lock);
    } else {
      wake_.wait_until(lock, next);
    }
  }
}

}  // namespace cincinnati::agent
