#include "policy_engine/adoption_history.h"

#include <boost/json.hpp>

#include <algorithm>
#include <limits>

#include "core/date_time.h"
#include "core/json.h"

namespace cincinnati::server {

AdoptionHistory::AdoptionHistory(AdoptionOptions options)
    : options_(options), next_due_(std::numeric_limits<int64_t>::min()) {
  options_.period = std::max<int64_t>(1, options_.period);
  options_.capacity = std::max<size_t>(1, options_.capacity);
}

void AdoptionHistory::MaybeSample(const PollSightings& sightings, int64_t now) {
  int64_t due = next_due_.load(std::memory_order_relaxed);
  if (now < due && due - now <= options_.period) return;
  // The next sample is due at the next multiple of the period: samples line up across restarts.
  const int64_t next = now - (now % options_.period + options_.period) % options_.period + options_.period;
  if (!next_due_.compare_exchange_strong(due, next)) return;  // another poll samples
  Sample sample{now, sightings.CountByVersion(now, options_.window)};
  std::sort(sample.clusters.begin(), sample.clusters.end());
  std::lock_guard lock(mu_);
  if (!samples_.empty() && samples_.back().time > now) samples_.clear();  // the clock went back
  samples_.push_back(std::move(sample));
  while (samples_.size() > options_.capacity) samples_.pop_front();
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
