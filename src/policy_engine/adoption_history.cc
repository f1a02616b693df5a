#include "policy_engine/adoption_history.h"

#include <algorithm>
#include <limits>

#include "core/date_time.h"
#include "core/json_writer.h"

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
  std::string out = "{\"periodSeconds\":" + std::to_string(options_.period) + ",\"windowSeconds\":" + std::to_string(options_.window) +
                    ",\"samples\":[";
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < samples_.size(); ++i) {
    const Sample& s = samples_[i];
    out += i == 0 ? "{\"time\":" : ",{\"time\":";
    AppendJsonString(out, FormatUnixSeconds(s.time));
    out += ",\"clusters\":{";
    for (size_t v = 0; v < s.clusters.size(); ++v) {
      if (v > 0) out += ',';
      AppendJsonString(out, s.clusters[v].first);
      out += ':' + std::to_string(s.clusters[v].second);
    }
    out += "}}";
  }
  return out + "]}";
}

}  // namespace cincinnati::server
