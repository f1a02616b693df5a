// AdoptionHistory: how many clusters a policy engine saw polling at each version, over
// time: the graph page's adoption curves, the picture the fleet simulator
// draws in adoption.svg, from the fleet that really polls. Each sample counts the ids
// whose last poll was within `window` seconds (a day by default: agents poll every few
// minutes) by the version they last polled at (reports/poll_sightings.h; only polls with a UUID
// id are seen, and only while reports are on).
//
// A sample is due every `period` seconds of the service's clock and is taken by the
// poll that finds it due: one pass over the sightings, each shard locked in turn (0.07 ms
// for 100,000 ids, 2 ms for a million: that one poll waits, once a period; another
// poll waits at most for one shard, a 64th of it); nothing runs while nobody polls. Bounded: `capacity` samples (by default two weeks of
// 10-minute samples), each of at most 256 versions (the rest as "other"), about 10 KB
// each at most. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "reports/poll_sightings.h"

namespace cincinnati::server {

struct AdoptionOptions {
  int64_t period = 600;    // seconds between samples
  int64_t window = 86400;  // an id counts when its last poll is this recent
  size_t capacity = 2016;  // samples kept, the oldest dropped first
};

class AdoptionHistory {
 public:
  explicit AdoptionHistory(AdoptionOptions options = {});

  // Takes a sample when one is due at `now`: at most one caller samples, the others
  // return at once. A clock that went back more than a period starts over.
  void MaybeSample(const PollSightings& sightings, int64_t now);
  // {"periodSeconds":600,"windowSeconds":86400,"samples":[{"time":"2030-01-01T00:00:00Z",
  //  "clusters":{"4.13.1":12,"4.13.2":30}},...]}, oldest first, versions by name.
  std::string Json() const;

 private:
  struct Sample {
    int64_t time = 0;
    std::vector<std::pair<std::string, uint64_t>> clusters;
  };

  AdoptionOptions options_;
  std::atomic<int64_t> next_due_;
  mutable std::mutex mu_;
  std::deque<Sample> samples_;  // under mu_
};

}  // namespace cincinnati::server
