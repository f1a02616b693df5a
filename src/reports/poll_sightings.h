// PollSightings: which cluster ids a policy engine saw polling at which version, so that
// an update report is accepted only from a cluster that has been polling at its `from`
// (or `to`) for a while. Clients are anonymous; this is what makes a report more than a
// claim. It also keeps each id's daily report allowance, and counts ids by the version
// they last polled at for the adoption chart (policy_engine/adoption_history.h): as
// counts, and, for replicas that share their samples, as a distinct-count sketch per
// version (reports/fleet_sketch.h) whose ids are hashed with a key every replica shares.
//
// Only UUID ids (in any case) and plain versions (at most 31 characters of
// [0-9A-Za-z.-]) are kept: anything else is ignored. Per id it keeps the last two
// versions it polled at (first and last seen, polls) and its reports today.
//
// Bounded: at most `capacity` ids in 64 shards, a lock each, held on the graph path for
// one lookup (Record allocates nothing: construction does). About 77 bytes an id at full
// capacity (measured: BM_SightingsRecord, bench/sightings_bench.cc), so the default
// 1,048,576 ids take about 81 MB: a 64-byte entry in a slab per shard (its pages used as
// ids arrive) and 12 bytes of open-addressing index. To fit, a version is kept as a
// salted 64-bit hash (the names CountByVersion reports live in a table of at most 256
// per shard, each kept while some id last polled at it: an id whose version found no
// room counts as "other"), times as unsigned 32-bit seconds (until 2106), polls counted
// up to 65,535 and reports up to 65,535 a day.
//
// An id seen once waits on probation; a poll at least a minute after its first promotes
// it (agents poll every 2 to 4 minutes). When a shard is full, the oldest id on probation
// goes first; a protected id goes only when none is on probation: a CLOCK hand over the
// shard's ids passes over an id polled since the hand last passed it (clearing that mark)
// and takes the first one not polled since, the least recently polled with a second
// chance. So a flood of invented ids pushes out invented ids, and pushing out polling
// clusters takes ids that keep polling. Ids and versions are hashed with SipHash-1-3 and
// a random key per process, so that nobody can aim ids at one shard or one bucket, or
// make one version pass for another (the sketches' shared key is for them alone: it
// never touches the table). Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reports/fleet_sketch.h"

namespace cincinnati::server {

class PollSightings {
 public:
  explicit PollSightings(size_t capacity = 1 << 20);
  ~PollSightings();
  PollSightings(const PollSightings&) = delete;
  PollSightings& operator=(const PollSightings&) = delete;

  // A poll by `id` at `version` at `now` (Unix seconds); ignored unless both are well formed.
  void Record(std::string_view id, std::string_view version, int64_t now);
  // Whether `id` polled at `version` at least `min_polls` times, first `min_age` seconds or
  // more before `now`, and last within `window` seconds of it.
  bool SeenAt(std::string_view id, std::string_view version, int64_t now, int64_t window, int64_t min_age, int min_polls) const;
  // Counts a report from `id` against its daily allowance; false when it is used up (or
  // the id is unknown).
  bool ChargeReport(std::string_view id, int64_t now, int per_day);
  // Gives back one report ChargeReport counted for `id` on `now`'s day (the intake
  // refunds a duplicate resend); nothing when none was counted that day.
  void RefundReport(std::string_view id, int64_t now);
  // Ids whose last poll was within `window` seconds before `now`, by the version they
  // last polled at: at most 256 versions named, the rest as "other". Holds each shard's
  // lock for one pass over its ids.
  std::vector<std::pair<std::string, uint64_t>> CountByVersion(int64_t now, int64_t window) const;
  // CountByVersion's counts (the same versions named, "other", the same window), each
  // with a sketch of its ids: an id's 128 bits hashed with SipHash and `key`, the key
  // replicas share (not this process's salt), so that every replica puts an id in the
  // same register. Holds each shard's lock for one pass that copies its recent ids out;
  // they are hashed after. Up to 257 sketches of 4 KiB while it runs.
  struct VersionSketch {
    std::string version;
    uint64_t count = 0;
    FleetSketch sketch;
  };
  std::vector<VersionSketch> SketchByVersion(int64_t now, int64_t window, const SketchKey& key) const;
  size_t size() const;

 private:
  struct Shard;  // poll_sightings.cc: the layout
  Shard& ShardOf(uint64_t key_hash) const;
  // Calls `use(entry)` with `id`'s shard locked; false when `id` is unknown or no UUID.
  template <typename Use>
  bool WithEntry(std::string_view id, Use use) const;

  uint64_t salt_[2];  // SipHash's key
  std::unique_ptr<Shard[]> shards_;
};

}  // namespace cincinnati::server
