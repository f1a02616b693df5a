// PollSightings: which cluster ids a policy engine saw polling at which version, so that
// an update report is accepted only from a cluster that polled at its `from` recently
// (issue 31). Clients are anonymous; this is what makes a report more than a claim.
//
// Bounded: at most `capacity` ids, about 120 bytes each, in 64 shards (a lock each,
// held for a map lookup: the graph path records every poll with an id and a version).
// An id seen once waits in its shard's probation queue; an id seen again is protected.
// When a shard is full, the oldest id on probation goes first, and a protected id only
// when no id is on probation, so a flood of invented ids pushes out invented ids, not
// the clusters that poll every few minutes. Per id it keeps the last two versions it
// polled at (first and last seen) and how many reports it sent today. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace cincinnati::server {

class PollSightings {
 public:
  explicit PollSightings(size_t capacity = 1 << 20);

  // A poll by `id` at `version` at `now` (Unix seconds).
  void Record(std::string_view id, std::string_view version, int64_t now);
  // Whether `id` polled at `version` within `window` seconds before `now`, and was first
  // seen at that version at least `min_age` seconds before `started`.
  bool SawAt(std::string_view id, std::string_view version, int64_t started, int64_t now, int64_t window, int64_t min_age) const;
  // Counts a report from `id` against its daily allowance; false when it is used up (or
  // the id is unknown).
  bool ChargeReport(std::string_view id, int64_t now, int per_day);
  size_t size() const;

 private:
  struct Seen {
    std::string version;
    int64_t first = 0, last = 0;
  };
  struct Entry {
    std::array<Seen, 2> seen;  // [0]: the latest version polled at
    int64_t day = 0;           // the day (Unix days) `reports` counts
    int reports = 0;
    bool is_protected = false;
  };
  // Lookups by string_view without building a string (the poll path).
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<std::string, Entry, Hash, std::equal_to<>> entries;
    std::deque<std::string> probation, protected_ids;  // oldest first; may hold stale names
  };
  Shard& ShardOf(std::string_view id) const;
  void Evict(Shard& shard);  // under shard.mu

  size_t shard_capacity_;
  mutable std::array<Shard, 64> shards_;
};

}  // namespace cincinnati::server
