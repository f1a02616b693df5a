// The sequential brake rule (reports/sequential_brake.h): its closed form against the
// integral it stands for, the shape the guarantee needs, and the guarantee itself on
// sequences checked after every attempt.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "reports/sequential_brake.h"

namespace cincinnati::reports {
namespace {

// L_n by the trapezoid rule on the truncated, normalised Beta prior.
double IntegratedRatio(int k, int n, double p0, const MixturePrior& prior) {
  const double a = prior.mean * prior.strength, b = (1 - prior.mean) * prior.strength;
  const int steps = 200'000;
  double top = 0, mass = 0;
  for (int i = 0; i <= steps; ++i) {
    const double p = p0 + (1 - p0) * i / steps;
    const double w = (i == 0 || i == steps ? 0.5 : 1.0) * std::pow(p, a - 1) * std::pow(1 - p, b - 1);
    mass += w;
    top += w * std::pow(p / p0, k) * std::pow((1 - p) / (1 - p0), n - k);
  }
  return top / mass;
}

TEST(SequentialBrakeTest, TheClosedFormIsTheIntegral) {
  const MixturePrior prior;
  for (auto [k, n] : {std::pair{0, 10}, {3, 20}, {8, 40}, {1, 1}, {12, 60}}) {
    const double integral = IntegratedRatio(k, n, 0.05, prior);
    EXPECT_NEAR(std::exp(LogMixtureRatio(k, n, 0.05, prior)) / integral, 1, 1e-4) << k << " of " << n;
  }
  EXPECT_EQ(LogMixtureRatio(0, 0, 0.05, prior), 0);
}

TEST(SequentialBrakeTest, MonotoneInFailuresAndNeverBrakesAtOrUnderTheThreshold) {
  const BrakeRule rule;
  const MixturePrior prior;
  for (int n = 1; n <= 600; n += (n < 100 ? 1 : 7)) {
    double previous = -INFINITY;
    for (int k = 0; k <= n; ++k) {
      const double log_ratio = LogMixtureRatio(k, n, rule.threshold, prior);
      ASSERT_FALSE(std::isnan(log_ratio)) << k << " of " << n;
      ASSERT_GE(log_ratio, previous) << k << " of " << n;
      previous = log_ratio;
      if (k <= rule.threshold * n) {
        ASSERT_LE(log_ratio, 1e-12) << k << " of " << n;
        ASSERT_FALSE(EvaluateSequential({.clusters = n, .failures = k}, rule, prior).brake);
      }
    }
  }
}

TEST(SequentialBrakeTest, BrakesATwentyPercentEdgeAfterAFewDozenReports) {
  const BrakeRule rule;
  int first = -1;
  for (int n = 1; n <= 200 && first < 0; ++n) {
    if (EvaluateSequential({.clusters = n, .failures = n / 5}, rule).brake) first = n;
  }
  EXPECT_GE(first, rule.min_clusters);
  EXPECT_LE(first, 30);  // as the header says
  // min_clusters still holds: 10 failures of 10 are not enough.
  EXPECT_FALSE(EvaluateSequential({.clusters = 10, .failures = 10}, rule).brake);
  EXPECT_GT(EvaluateSequential({.clusters = 10, .failures = 10}, rule).log_ratio, 5);
}

TEST(SequentialBrakeTest, StableInLogsAtAMillionReports) {
  const BrakeRule rule;
  const MixturePrior prior;
  const double at_threshold = LogMixtureRatio(50'000, 1'000'000, 0.05, prior);
  EXPECT_TRUE(std::isfinite(at_threshold));
  EXPECT_LT(at_threshold, 0);
  EXPECT_LE(LogMixtureRatio(10'000, 1'000'000, 0.05, prior), 0);  // far under: may be -inf, never NaN
  const double above = LogMixtureRatio(51'500, 1'000'000, 0.05, prior);  // 5.15 %: z about 6.9
  EXPECT_TRUE(std::isfinite(above));
  EXPECT_GT(above, std::log(20));
  EXPECT_TRUE(EvaluateSequential({.clusters = 1'000'000, .failures = 51'500}, rule, prior).brake);
  EXPECT_FALSE(EvaluateSequential({.clusters = 1'000'000, .failures = 49'000}, rule, prior).brake);
  EXPECT_TRUE(std::isfinite(LogMixtureRatio(999'999, 1'000'000, 0.05, prior)));
}

// Checked after every one of 2,000 attempts, edges at the threshold and under it are
// braked in at most alpha of the sequences; the Wilson rule checked the same way is not.
TEST(SequentialBrakeTest, TheFalseBrakeRateHoldsOverTheWholeSequence) {
  const BrakeRule rule;
  std::mt19937_64 random(12345);
  for (double rate : {0.05, 0.04}) {
    int sequential = 0, wilson = 0;
    const int sequences = 400;
    for (int s = 0; s < sequences; ++s) {
      std::bernoulli_distribution fails(rate);
      bool braked = false, wilson_braked = false;
      int64_t k = 0;
      for (int64_t n = 1; n <= 2000; ++n) {
        k += fails(random);
        if (!braked && k > rule.threshold * n) braked = EvaluateSequential({.clusters = n, .failures = k}, rule).brake;
        wilson_braked = wilson_braked || Evaluate({.clusters = n, .failures = k}, rule).brake;
      }
      sequential += braked;
      wilson += wilson_braked;
    }
    EXPECT_LE(sequential, sequences * 0.05) << rate;  // Ville: at most alpha (here with sampling slack none)
    if (rate == 0.05) {
      EXPECT_GT(wilson, sequences * 0.10) << "the old rule's weakness, which this test must see";
    }
  }
}

TEST(SequentialBrakeTest, TheVerdictCarriesTheEdgeAndBaselineRates) {
  const SequentialVerdict v =
      EvaluateSequential({.clusters = 100, .failures = 20, .excluded = 4, .excluded_failures = 3}, BrakeRule{});
  EXPECT_TRUE(v.brake);
  EXPECT_DOUBLE_EQ(v.edge_rate, 0.2);
  EXPECT_DOUBLE_EQ(v.baseline_rate, 0.75);
}

TEST(SequentialBrakeTest, PriorSettingsAreChecked) {
  const BrakeRule rule;
  EXPECT_TRUE(ValidateMixturePrior({}, rule).ok());
  EXPECT_FALSE(ValidateMixturePrior({.mean = 0.05, .strength = 10}, rule).ok());
  EXPECT_FALSE(ValidateMixturePrior({.mean = 1, .strength = 10}, rule).ok());
  EXPECT_FALSE(ValidateMixturePrior({.mean = 0.2, .strength = 0}, rule).ok());
  EXPECT_FALSE(ValidateMixturePrior({.mean = 0.2, .strength = NAN}, rule).ok());
}

}  // namespace
}  // namespace cincinnati::reports
