#include "server/poll_sightings.h"

#include <algorithm>
#include <random>

namespace cincinnati::server {
namespace {

constexpr int64_t kPromotionGap = 60;  // seconds between the first poll and the one that protects an id
constexpr size_t kMaxVersion = 31;

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool PlainVersion(std::string_view v) {
  if (v.empty() || v.size() > kMaxVersion) return false;
  return std::all_of(v.begin(), v.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '-';
  });
}

}  // namespace

size_t PollSightings::KeyHash::operator()(const Key& k) const {
  // splitmix64's finalizer over both halves and the salt.
  uint64_t x = k[0] ^ salt ^ (k[1] * 0x9e3779b97f4a7c15ULL);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<size_t>(x ^ (x >> 31));
}

PollSightings::PollSightings(size_t capacity) : shard_capacity_(std::max<size_t>(1, capacity / 64)) {
  std::random_device random;
  hash_.salt = (uint64_t{random()} << 32) | random();
  for (Shard& shard : shards_) shard.entries = std::unordered_map<Key, Entry, KeyHash>(16, hash_);
}

bool PollSightings::ParseKey(std::string_view id, Key& key) {
  if (id.size() != 36) return false;
  key = {0, 0};
  int digits = 0;
  for (size_t i = 0; i < id.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (id[i] != '-') return false;
      continue;
    }
    const int h = Hex(id[i]);
    if (h < 0) return false;
    uint64_t& half = key[digits < 16 ? 0 : 1];
    half = (half << 4) | static_cast<uint64_t>(h);
    ++digits;
  }
  return true;
}

void PollSightings::Evict(Shard& shard, int64_t now) {
  // Queues may name ids already evicted or promoted: skip those.
  while (!shard.probation.empty()) {
    const Key key = shard.probation.front();
    shard.probation.pop_front();
    auto at = shard.entries.find(key);
    if (at != shard.entries.end() && !at->second.is_protected) {
      shard.entries.erase(at);
      return;
    }
  }
  // Least recently polled first: one polled since it was queued goes to the back once.
  for (size_t turns = shard.protected_ids.size(); turns > 0 && !shard.protected_ids.empty(); --turns) {
    const Key key = shard.protected_ids.front();
    shard.protected_ids.pop_front();
    auto at = shard.entries.find(key);
    if (at == shard.entries.end()) continue;
    if (at->second.seen[0].last > at->second.queued_at) {
      at->second.queued_at = now;
      shard.protected_ids.push_back(key);
      continue;
    }
    shard.entries.erase(at);
    return;
  }
  if (!shard.protected_ids.empty()) {  // every one polled lately: the oldest in the queue goes
    shard.entries.erase(shard.protected_ids.front());
    shard.protected_ids.pop_front();
  }
}

void PollSightings::Record(std::string_view id, std::string_view version, int64_t now) {
  Key key;
  if (!ParseKey(id, key) || !PlainVersion(version)) return;
  Shard& shard = ShardOf(key);
  std::lock_guard lock(shard.mu);
  auto at = shard.entries.find(key);
  if (at == shard.entries.end()) {
    if (shard.entries.size() >= shard_capacity_) Evict(shard, now);
    at = shard.entries.emplace(key, Entry{}).first;
    at->second.seen[0] = {std::string(version), now, now, 1};
    shard.probation.push_back(key);
    if (shard.probation.size() > 2 * shard_capacity_) shard.probation.pop_front();  // stale names
    return;
  }
  Entry& e = at->second;
  if (e.seen[0].version == version) {
    e.seen[0].last = std::max(e.seen[0].last, now);
    e.seen[0].polls = std::min(e.seen[0].polls + 1, 1 << 30);
  } else if (e.seen[1].version == version) {
    std::swap(e.seen[0], e.seen[1]);
    e.seen[0].last = std::max(e.seen[0].last, now);
    e.seen[0].polls = std::min(e.seen[0].polls + 1, 1 << 30);
  } else {
    e.seen[1] = std::move(e.seen[0]);
    e.seen[0] = {std::string(version), now, now, 1};
  }
  const int64_t first = std::min(e.seen[0].first, e.seen[1].polls ? e.seen[1].first : e.seen[0].first);
  if (!e.is_protected && now - first >= kPromotionGap) {
    e.is_protected = true;
    e.queued_at = now;
    shard.protected_ids.push_back(key);
    if (shard.protected_ids.size() > 2 * shard_capacity_) shard.protected_ids.pop_front();
  }
}

bool PollSightings::SeenAt(std::string_view id, std::string_view version, int64_t now, int64_t window, int64_t min_age,
                           int min_polls) const {
  Key key;
  if (!ParseKey(id, key) || version.empty()) return false;
  Shard& shard = ShardOf(key);
  std::lock_guard lock(shard.mu);
  auto at = shard.entries.find(key);
  if (at == shard.entries.end()) return false;
  for (const Seen& s : at->second.seen) {
    if (s.version == version && s.polls >= min_polls && s.first <= now - min_age && s.last >= now - window) return true;
  }
  return false;
}

bool PollSightings::ChargeReport(std::string_view id, int64_t now, int per_day) {
  Key key;
  if (!ParseKey(id, key)) return false;
  Shard& shard = ShardOf(key);
  std::lock_guard lock(shard.mu);
  auto at = shard.entries.find(key);
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

void PollSightings::RefundReport(std::string_view id, int64_t now) {
  Key key;
  if (!ParseKey(id, key)) return;
  Shard& shard = ShardOf(key);
  std::lock_guard lock(shard.mu);
  auto at = shard.entries.find(key);
  if (at == shard.entries.end() || at->second.day != now / 86400 || at->second.reports == 0) return;
  --at->second.reports;
}

size_t PollSightings::size() const {
  size_t n = 0;
  for (const Shard& s : shards_) {
    std::lock_guard lock(s.mu);
    n += s.entries.size();
  }
  return n;
}

std::vector<std::pair<std::string, uint64_t>> PollSightings::CountByVersion(int64_t now, int64_t window) const {
  // Few versions are live at once: a short list searched in place beats a map here.
  // Versions are whatever clients sent: past kMaxVersions, the rest count as "other".
  constexpr size_t kMaxVersions = 256;
  std::vector<std::pair<std::string, uint64_t>> counts;
  uint64_t other = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard lock(shard.mu);
    for (const auto& [key, entry] : shard.entries) {
      const Seen& latest = entry.seen[0];
      if (latest.polls == 0 || latest.last < now - window || latest.last > now) continue;
      auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == latest.version; });
      if (it != counts.end()) {
        ++it->second;
      } else if (counts.size() < kMaxVersions) {
        counts.emplace_back(latest.version, 1);
      } else {
        ++other;
      }
    }
  }
  if (other > 0) counts.emplace_back("other", other);
  return counts;
}

}  // namespace cincinnati::server
