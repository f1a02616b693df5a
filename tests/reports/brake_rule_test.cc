// The rule that brakes an edge (reports/brake_rule.h): the Wilson lower bound, the
// numbers docs/reports-and-brakes.md states, and the settings' checks.
#include <gtest/gtest.h>

#include "reports/brake_rule.h"

namespace cincinnati::reports {
namespace {

TEST(BrakeRuleTest, OneSidedZIsTheNormalQuantile) {
  EXPECT_NEAR(OneSidedZ(0.95), 1.644854, 1e-5);
  EXPECT_NEAR(OneSidedZ(0.975), 1.959964, 1e-5);
  EXPECT_NEAR(OneSidedZ(0.99), 2.326348, 1e-5);
  EXPECT_NEAR(OneSidedZ(0.5), 0, 1e-9);
}

TEST(BrakeRuleTest, TheWilsonLowerBoundOfAKnownCase) {
  // 3 failures of 20 at z = 1.645: (0.15 + z²/40 - z·sqrt(0.006375 + z²/1600)) / (1 + z²/20).
  EXPECT_NEAR(WilsonLowerBound(3, 20, 1.644854), 0.06158, 1e-4);
  EXPECT_EQ(WilsonLowerBound(0, 50, 1.644854), 0);
  EXPECT_EQ(WilsonLowerBound(0, 0, 1.644854), 0);
  EXPECT_GT(WilsonLowerBound(20, 20, 1.644854), 0.85);
}

TEST(BrakeRuleTest, TheBoundNeverExceedsTheRateAndGrowsWithFailures) {
  const double z = OneSidedZ(0.95);
  for (int n = 1; n <= 400; ++n) {
    double previous = -1;
    for (int k = 0; k <= n; ++k) {
      const double l = WilsonLowerBound(k, n, z);
      ASSERT_LE(l, static_cast<double>(k) / n + 1e-12) << k << "/" << n;
      ASSERT_GE(l, previous) << k << "/" << n;
      previous = l;
    }
  }
}

// The failures an edge needs before it is braked, with the defaults (as docs/reports-and-brakes.md says).
int64_t FailuresToBrake(int64_t clusters) {
  for (int64_t k = 0; k <= clusters; ++k) {
    if (Evaluate({clusters, k}, BrakeRule{}).brake) return k;
  }
  return -1;
}

TEST(BrakeRuleTest, TheDefaultsNeedThreeOfTwentyNineOfAHundredAndSixtyTwoOfAThousand) {
  EXPECT_EQ(FailuresToBrake(20), 3);
  EXPECT_EQ(FailuresToBrake(100), 9);
  EXPECT_EQ(FailuresToBrake(1000), 62);
  EXPECT_EQ(FailuresToBrake(19), -1) << "fewer clusters than min_clusters never brake";
  // A healthy edge is not braked by volume: 4 % of a million clusters failing.
  EXPECT_FALSE(Evaluate({1000000, 40000}, BrakeRule{}).brake);
  EXPECT_TRUE(Evaluate({1000000, 51000}, BrakeRule{}).brake);
}

TEST(BrakeRuleTest, SettingsOutOfRangeAreRefusedByName) {
  EXPECT_TRUE(ValidateBrakeRule({}).ok());
  EXPECT_EQ(ValidateBrakeRule({0, 0.05, 0.95}).message(), "brakes.min_clusters: must be at least 1");
  EXPECT_EQ(ValidateBrakeRule({20, 1.0, 0.95}).message(), "brakes.threshold: must be between 0 and 1");
  EXPECT_EQ(ValidateBrakeRule({20, 0.05, 1.0}).message(), "brakes.confidence: must be at least 0.5 and less than 1");
}

}  // namespace
}  // namespace cincinnati::reports
