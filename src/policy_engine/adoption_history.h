// AdoptionHistory: how many clusters a policy engine saw polling at each version, over
// time: the graph page's adoption curves, the picture the fleet simulator
// draws in adoption.svg, from the fleet that really polls. Each sample counts the ids
// whose last poll was within `window` seconds (a day by default: agents poll every few
// minutes) by the version they last polled at (reports/poll_sightings.h; only polls with a UUID
// id are seen, and only while reports are on).
//
// A sample is due every `period` seconds of the service's clock and is noticed by the
// poll that finds it due; nothing runs while nobody polls. Alone (no store), that poll
// takes it: one pass over the sightings, each shard locked in turn (0.07 ms for 100,000
// ids, 2 ms for a million: that one poll waits, once a period; another poll waits at most
// for one shard, a 64th of it).
//
// With a store (adoption_store.h: engines side by side behind a balancer, each seeing a
// share of every cluster's polls), the poll only hands the sample to the history's own
// thread. That thread makes a sketch per version (PollSightings::SketchByVersion: 0.8 ms
// for 100,000 ids, 10 ms for a million, each shard locked only while its ids are copied
// out; BM_SightingsSketch), shares it, and records the fleet's counts: the union of the
// latest sketches of every engine (each at most two periods old), so a cluster counts
// once however its polls were spread, within about 1.6 % (fleet_sketch.h). When the
// store fails, that sample records this engine's own counts instead (logged once per
// outage), so the chart never goes blank; no poll waits for the database.
//
// Bounded: `capacity` samples (by default two weeks of 10-minute samples), each of at
// most 256 versions (the rest as "other"), about 10 KB each at most. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "policy_engine/adoption_store.h"
#include "reports/poll_sightings.h"

namespace cincinnati::server {

struct AdoptionOptions {
  int64_t period = 600;    // seconds between samples
  int64_t window = 86400;  // an id counts when its last poll is this recent
  size_t capacity = 2016;  // samples kept, the oldest dropped first
  // The samples' shared store; null: this engine counts alone, on the poll's thread.
  std::shared_ptr<AdoptionStore> store = nullptr;
};

class AdoptionHistory {
 public:
  explicit AdoptionHistory(AdoptionOptions options = {});
  ~AdoptionHistory();  // waits for a sample being taken
  AdoptionHistory(const AdoptionHistory&) = delete;
  AdoptionHistory& operator=(const AdoptionHistory&) = delete;

  // Takes a sample when one is due at `now`: at most one caller samples, the others
  // return at once (with a store, it is taken on the history's thread; `sightings` must
  // outlive the history). A clock that went back more than a period starts over.
  void MaybeSample(const PollSightings& sightings, int64_t now);
  // Returns once no sample is waiting or being taken (at once without a store).
  void Flush();
  // {"periodSeconds":600,"windowSeconds":86400,"samples":[{"time":"2030-01-01T00:00:00Z",
  //  "clusters":{"4.13.1":12,"4.13.2":30}},...]}, oldest first, versions by name.
  std::string Json() const;

 private:
  struct Sample {
    int64_t time = 0;
    std::vector<std::pair<std::string, uint64_t>> clusters;
  };

  using Counts = std::vector<std::pair<std::string, uint64_t>>;
  void Record(Sample sample);
  void RunSampler();
  // The fleet's counts through the store, or this engine's when the store fails.
  Counts SampleShared(const PollSightings& sightings, int64_t now);

  AdoptionOptions options_;
  std::atomic<int64_t> next_due_;
  mutable std::mutex mu_;
  std::deque<Sample> samples_;  // under mu_
  // The sampler's hand-over, with a store.
  std::mutex sampler_mu_;
  std::condition_variable sampler_cv_;
  const PollSightings* pending_ = nullptr;  // under sampler_mu_: a sample is due
  int64_t pending_at_ = 0;                  // under sampler_mu_
  bool busy_ = false, stop_ = false;        // under sampler_mu_
  bool outage_ = false;                     // the sampler's: the store failed last time
  std::thread sampler_;
};

}  // namespace cincinnati::server
