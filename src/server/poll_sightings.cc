#include "server/poll_sightings.h"

#include <algorithm>
#include <functional>

namespace cincinnati::server {

PollSightings::PollSightings(size_t capacity) : shard_capacity_(std::max<size_t>(1, capacity / 64)) {}

PollSightings::Shard& PollSightings::ShardOf(std::string_view id) const {
  return shards_[std::hash<std::string_view>{}(id) % shards_.size()];
}

void PollSightings::Evict(Shard& shard) {
  // Queues may name ids already evicted or promoted: skip those.
  while (!shard.probation.empty()) {
    auto at = shard.entries.find(shard.probation.front());
    shard.probation.pop_front();
    if (at != shard.entries.end() && !at->second.is_protected) {
      shard.entries.erase(at);
      return;
    }
  }
  while (!shard.protected_ids.empty()) {
    auto at = shard.entries.find(shard.protected_ids.front());
    shard.protected_ids.pop_front();
    if (at != shard.entries.end()) {
      shard.entries.erase(at);
      return;
    }
  }
}

void PollSightings::Record(std::string_view id, std::string_view version, int64_t now) {
  Shard& shard = ShardOf(id);
  std::lock_guard lock(shard.mu);
  auto at = shard.entries.find(id);
  if (at == shard.entries.end()) {
    if (shard.entries.size() >= shard_capacity_) Evict(shard);
    at = shard.entries.emplace(std::string(id), Entry{}).first;
    at->second.seen[0] = {std::string(version), now, now};
    shard.probation.emplace_back(id);
    // The queues hold at most twice the entries: stale names are dropped as they grow.
    if (shard.probation.size() > 2 * shard_capacity_) shard.probation.pop_front();
    return;
  }
  Entry& e = at->second;
  if (!e.is_protected) {
    e.is_protected = true;
    shard.protected_ids.emplace_back(id);
    if (shard.protected_ids.size() > 2 * shard_capacity_) shard.protected_ids.pop_front();
  }
  if (e.seen[0].version == version) {
    e.seen[0].last = std::max(e.seen[0].last, now);
  } else if (e.seen[1].version == version) {
    std::swap(e.seen[0], e.seen[1]);
    e.seen[0].last = std::max(e.seen[0].last, now);
  } else {
    e.seen[1] = std::move(e.seen[0]);
    e.seen[0] = {std::string(version), now, now};
  }
}

bool PollSightings::SawAt(std::string_view id, std::string_view version, int64_t started, int64_t now, int64_t window,
                          int64_t min_age) const {
  Shard& shard = ShardOf(id);
  std::lock_guard lock(shard.mu);
  auto at = shard.entries.find(id);
  if (at == shard.entries.end()) return false;
  for (const Seen& s : at->second.seen) {
    if (s.version == version && !version.empty() && s.last >= now - window && s.first <= started - min_age) return true;
  }
  return false;
}

bool PollSightings::ChargeReport(std::string_view id, int64_t now, int per_day) {
  Shard& shard = ShardOf(id);
  std::lock_guard lock(shard.mu);
  auto at = shard.entries.find(id);
  if (at == shard.entries.end()) return false;
  Entry& e = at->second;
  const int64_t day = now / 86400;
  if (e.day != day) {
    e.day = day;
    e.reports = 0;
  }
  if (e.reports >= per_day) return false;
  ++e.reports;
  return true;
}

size_t PollSightings::size() const {
  size_t n = 0;
  for (const Shard& s : shards_) {
    std::lock_guard lock(s.mu);
    n += s.entries.size();
  }
  return n;
}

}  // namespace cincinnati::server
