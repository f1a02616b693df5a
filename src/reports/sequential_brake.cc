#include "reports/sequential_brake.h"

#include <cmath>
#include <limits>

#include <boost/math/policies/policy.hpp>
#include <boost/math/special_functions/beta.hpp>
#include <boost/math/special_functions/gamma.hpp>

namespace cincinnati::reports {
namespace {

namespace bmp = boost::math::policies;
// Errors become NaN or infinities instead of exceptions: this file never throws.
using NoThrow = bmp::policy<bmp::domain_error<bmp::ignore_error>, bmp::pole_error<bmp::ignore_error>,
                            bmp::overflow_error<bmp::ignore_error>, bmp::underflow_error<bmp::ignore_error>,
                            bmp::evaluation_error<bmp::ignore_error>, bmp::rounding_error<bmp::ignore_error>>;

double LogBeta(double a, double b) {
  return boost::math::lgamma(a, NoThrow()) + boost::math::lgamma(b, NoThrow()) - boost::math::lgamma(a + b, NoThrow());
}

// log of the prior's mass above p0 times its normalisation: log(B(a, b)·Q(a, b, p0)).
double LogTruncatedBeta(double a, double b, double p0) {
  const double upper = boost::math::ibetac(a, b, p0, NoThrow());
  if (!(upper > 0)) return -std::numeric_limits<double>::infinity();
  return LogBeta(a, b) + std::log(upper);
}

}  // namespace

Status ValidateMixturePrior(const MixturePrior& prior, const BrakeRule& rule) {
  if (!(prior.mean > rule.threshold && prior.mean < 1)) {
    return Status::InvalidArgument("brakes.prior_mean: must be above brakes.threshold and below 1");
  }
  if (!(prior.strength >= 0.5 && prior.strength <= 1e6)) {
    return Status::InvalidArgument("brakes.prior_strength: must be between 0.5 and 1000000");
  }
  return Status::OK();
}

double LogMixtureRatio(int64_t failures, int64_t clusters, double threshold, const MixturePrior& prior) {
  if (clusters <= 0) return 0;
  const double n = static_cast<double>(clusters), k = static_cast<double>(failures);
  const double a = prior.mean * prior.strength, b = (1 - prior.mean) * prior.strength;
  const double prior_mass = LogTruncatedBeta(a, b, threshold);
  const double posterior_mass = LogTruncatedBeta(a + k, b + n - k, threshold);
  if (posterior_mass == -std::numeric_limits<double>::infinity()) return posterior_mass;  // all mass below p0
  return posterior_mass - prior_mass - k * std::log(threshold) - (n - k) * std::log1p(-threshold);
}

SequentialVerdict EvaluateSequential(const SequentialCounts& counts, const BrakeRule& rule, const MixturePrior& prior) {
  SequentialVerdict out;
  if (counts.clusters > 0) out.edge_rate = static_cast<double>(counts.failures) / static_cast<double>(counts.clusters);
  if (counts.excluded > 0) {
    out.baseline_rate = static_cast<double>(counts.excluded_failures) / static_cast<double>(counts.excluded);
  }
  out.log_ratio = LogMixtureRatio(counts.failures, counts.clusters, rule.threshold, prior);
  // k/n <= p0 gives L_n <= 1 (header): stated here too, against rounding.
  out.brake = counts.clusters >= rule.min_clusters && out.edge_rate > rule.threshold &&
              out.log_ratio >= -std::log1p(-rule.confidence);
  return out;
}

}  // namespace cincinnati::reports
