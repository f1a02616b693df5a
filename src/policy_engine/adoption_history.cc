#include "policy_engine/adoption_history.h"

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "core/date_time.h"
#include "core/guard.h"
#include "core/json.h"

namespace cincinnati::server {

AdoptionHistory::AdoptionHistory(AdoptionOptions options)
    : options_(std::move(options)), next_due_(std::numeric_limits<int64_t>::min()) {
  options_.period = std::max<int64_t>(1, options_.period);
  options_.capacity = std::max<size_t>(1, options_.capacity);
  if (options_.store) sampler_ = std::thread([this] { RunSampler(); });
}

AdoptionHistory::~AdoptionHistory() {
  {
    std::lock_guard lock(sampler_mu_);
    stop_ = true;
  }
  sampler_cv_.notify_all();
  if (sampler_.joinable()) sampler_.join();
}

void AdoptionHistory::MaybeSample(const PollSightings& sightings, int64_t now) {
  int64_t due = next_due_.load(std::memory_order_relaxed);
  if (now < due && due - now <= options_.period) return;
  // The next sample is due at the next multiple of the period: samples line up across restarts.
  const int64_t next = now - (now % options_.period + options_.period) % options_.period + options_.period;
  if (!next_due_.compare_exchange_strong(due, next)) return;  // another poll samples
  if (!options_.store) return Record({now, sightings.CountByVersion(now, options_.window)});
  {
    std::lock_guard lock(sampler_mu_);
    pending_ = &sightings;
    pending_at_ = now;
  }
  sampler_cv_.notify_all();
}

void AdoptionHistory::Flush() {
  std::unique_lock lock(sampler_mu_);
  sampler_cv_.wait(lock, [this] { return stop_ || (!pending_ && !busy_); });
}

void AdoptionHistory::Record(Sample sample) {
  std::sort(sample.clusters.begin(), sample.clusters.end());
  std::lock_guard lock(mu_);
  if (!samples_.empty() && samples_.back().time > sample.time) samples_.clear();  // the clock went back
  samples_.push_back(std::move(sample));
  while (samples_.size() > options_.capacity) samples_.pop_front();
}

void AdoptionHistory::RunSampler() {
  std::unique_lock lock(sampler_mu_);
  for (;;) {
    sampler_cv_.wait(lock, [this] { return stop_ || pending_; });
    if (stop_) return;
    const PollSightings* sightings = std::exchange(pending_, nullptr);
    const int64_t now = pending_at_;
    busy_ = true;
    lock.unlock();
    const Status taken = Guarded("adoption sample", [&] {
      Record({now, SampleShared(*sightings, now)});
      return Status::OK();
    });
    if (!taken.ok()) spdlog::error("adoption: {}", taken.message());
    lock.lock();
    busy_ = false;
    sampler_cv_.notify_all();  // Flush()
  }
}

AdoptionHistory::Counts AdoptionHistory::SampleShared(const PollSightings& sightings, int64_t now) {
  std::vector<PollSightings::VersionSketch> mine;
  Result<Counts> fleet = Guarded("adoption sketches", [&]() -> Result<Counts> {
    mine = sightings.SketchByVersion(now, options_.window, options_.store->key());
    return options_.store->Exchange(mine, now, 2 * options_.period);
  });
  if (fleet.ok()) {
    if (outage_) spdlog::info("adoption: the shared store is back; samples count the whole fleet again");
    outage_ = false;
    return std::move(*fleet);
  }
  if (!outage_) {
    spdlog::warn("adoption: {}; samples count this engine's polls only until the shared store is back",
                 fleet.status().message());
  }
  outage_ = true;
  Counts own;
  for (auto& v : mine) own.emplace_back(std::move(v.version), v.count);
  return own;
}

std::string AdoptionHistory::Json() const {
  boost::json::array samples;
  {
    std::lock_guard lock(mu_);
    for (const Sample& s : samples_) {
      boost::json::object clusters;
      for (const auto& [version, count] : s.clusters) clusters[version] = count;
      samples.push_back(boost::json::object{{"time", FormatUnixSeconds(s.time)}, {"clusters", std::move(clusters)}});
    }
  }
  return WriteJson(boost::json::object{
      {"periodSeconds", options_.period}, {"windowSeconds", options_.window}, {"samples", std::move(samples)}});
}

}  // namespace cincinnati::server
