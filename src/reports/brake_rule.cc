#include "reports/brake_rule.h"

#include <algorithm>
#include <cmath>

namespace cincinnati::reports {

Status ValidateBrakeRule(const BrakeRule& rule) {
  if (rule.min_clusters < 1) return Status::InvalidArgument("brakes.min_clusters: must be at least 1");
  if (!(rule.threshold > 0 && rule.threshold < 1)) return Status::InvalidArgument("brakes.threshold: must be between 0 and 1");
  if (!(rule.confidence >= 0.5 && rule.confidence < 1)) {
    return Status::InvalidArgument("brakes.confidence: must be at least 0.5 and less than 1");
  }
  return Status::OK();
}

double OneSidedZ(double confidence) {
  // Bisection on the normal tail P(Z > z) = erfc(z / sqrt 2) / 2, which falls from 0.5
  // at z = 0: 60 halvings of [0, 40] are exact to double precision.
  const double tail = 1 - std::clamp(confidence, 0.5, 1 - 1e-15);
  double lo = 0, hi = 40;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(mid / std::sqrt(2.0)) > tail ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double WilsonLowerBound(int64_t failures, int64_t clusters, double z) {
  if (clusters <= 0) return 0;
  const double n = static_cast<double>(clusters);
  const double p = std::clamp(static_cast<double>(failures) / n, 0.0, 1.0);
  const double z2 = z * z;
  const double centre = p + z2 / (2 * n);
  const double spread = z * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n));
  return std::max(0.0, (centre - spread) / (1 + z2 / n));
}

BrakeVerdict Evaluate(const EdgeCounts& counts, const BrakeRule& rule) {
  BrakeVerdict out;
  out.lower_bound = WilsonLowerBound(counts.failures, counts.clusters, OneSidedZ(rule.confidence));
  out.brake = counts.clusters >= rule.min_clusters && out.lower_bound > rule.threshold;
  return out;
}

}  // namespace cincinnati::reports
