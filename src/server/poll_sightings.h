// PollSightings: which cluster ids a policy engine saw polling at which version, so that
// an update report is accepted only from a cluster that has been polling at its `from`
// (or `to`) for a while (issue 31). Clients are anonymous; this is what makes a report
// more than a claim.
//
// Only UUID ids and plain versions (at most 31 characters of [0-9A-Za-z.-]) are kept:
// anything else is ignored. Bounded: at most `capacity` ids in 64 shards (a lock each,
// held for one hash lookup on the graph path), about 200 bytes per id (the id as 16
// bytes, two versions in place, the queue slot), so the default million ids take about
// 200 MB. An id seen once waits on probation; a poll at least a minute after its first
// promotes it (agents poll every 2 to 4 minutes). When a shard is full, the oldest id on
// probation goes first; a protected id goes only when none is on probation, least
// recently polled first (a second chance for one polled since it was queued). So a flood
// of invented ids pushes out invented ids, and pushing out polling clusters takes ids
// that keep polling. Per id it keeps the last two versions it polled at (first and
// last seen, polls) and its reports today. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cincinnati::server {

class PollSightings {
 public:
  explicit PollSightings(size_t capacity = 1 << 20);

  // A poll by `id` at `version` at `now` (Unix seconds); ignored unless both are well formed.
  void Record(std::string_view id, std::string_view version, int64_t now);
  // Whether `id` polled at `version` at least `min_polls` times, first `min_age` seconds or
  // more before `now`, and last within `window` seconds of it.
  bool SeenAt(std::string_view id, std::string_view version, int64_t now, int64_t window, int64_t min_age, int min_polls) const;
  // Counts a report from `id` against its daily allowance; false when it is used up (or
  // the id is unknown).
  bool ChargeReport(std::string_view id, int64_t now, int per_day);
  // Gives back one report charged today (a duplicate, a refusal, a failure).
  void RefundReport(std::string_view id, int64_t now);
  // Ids whose last poll was within `window` seconds before `now`, by the version they
  // last polled at (adoption_history.h). Holds each shard's lock for one pass over its ids.
  std::vector<std::pair<std::string, uint64_t>> CountByVersion(int64_t now, int64_t window) const;
  size_t size() const;

 private:
  using Key = std::array<uint64_t, 2>;  // the UUID's 128 bits
  // Keyed with a random salt per process, so that nobody can aim ids at one shard or one bucket.
  struct KeyHash {
    uint64_t salt;  // no initializer here: the map default-constructs it before the class is complete
    size_t operator()(const Key& k) const;
  };
  struct Seen {
    std::string version;  // short: kept in place (no allocation)
    int64_t first = 0, last = 0;
    int32_t polls = 0;
  };
  struct Entry {
    std::array<Seen, 2> seen;  // [0]: the latest version polled at
    int64_t day = 0;           // the day (Unix days) `reports` counts
    int32_t reports = 0;
    bool is_protected = false;
    int64_t queued_at = 0;  // when it joined the protected queue (second chance)
  };
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<Key, Entry, KeyHash> entries;  // hashed with the sightings' salt
    std::deque<Key> probation, protected_ids;  // oldest first; may name evicted ids
  };
  static bool ParseKey(std::string_view id, Key& key);
  Shard& ShardOf(const Key& key) const { return shards_[(hash_(key) >> 32) % shards_.size()]; }
  void Evict(Shard& shard, int64_t now);  // under shard.mu

  KeyHash hash_;
  size_t shard_capacity_;
  mutable std::array<Shard, 64> shards_;
};

}  // namespace cincinnati::server
