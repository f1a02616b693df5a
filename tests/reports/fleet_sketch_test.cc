// The distinct-count sketch replicas share (reports/fleet_sketch.h): its estimates at
// known cardinalities, unions by merging, and its bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "reports/fleet_sketch.h"

namespace cincinnati::server {
namespace {

// A sketch of `n` random 64-bit hashes from `seed`'s stream, starting at its `skip`-th.
FleetSketch SketchOf(uint64_t n, uint64_t seed, uint64_t skip = 0) {
  std::mt19937_64 random(seed);
  for (uint64_t i = 0; i < skip; ++i) random();
  FleetSketch sketch;
  for (uint64_t i = 0; i < n; ++i) sketch.Add(random());
  return sketch;
}

double RelativeError(const FleetSketch& sketch, uint64_t n) { return std::abs(sketch.Estimate() - double(n)) / double(n); }

TEST(FleetSketchTest, AnEmptySketchCountsNothingAndOneIdCountsOne) {
  EXPECT_EQ(FleetSketch().Estimate(), 0);
  EXPECT_TRUE(FleetSketch().empty());
  FleetSketch one;
  one.Add(0x0123456789abcdefULL);
  one.Add(0x0123456789abcdefULL);  // the same id again
  EXPECT_FALSE(one.empty());
  EXPECT_EQ(std::llround(one.Estimate()), 1);
}

TEST(FleetSketchTest, EstimatesKnownCardinalitiesWithinAFewPercent) {
  // Small counts are linear counting's (nearly exact), large ones the registers' (1.6 %
  // standard error); 10,000 is where the classic estimator hands over between the two.
  for (uint64_t seed : {1, 2, 3}) {
    EXPECT_NEAR(SketchOf(100, seed).Estimate(), 100, 3) << seed;
    EXPECT_LT(RelativeError(SketchOf(10'000, seed), 10'000), 0.03) << seed;
    EXPECT_LT(RelativeError(SketchOf(25'000, seed), 25'000), 0.04) << seed;
  }
  EXPECT_LT(RelativeError(SketchOf(1'000'000, 4), 1'000'000), 0.04);
}

TEST(FleetSketchTest, MergingSketchesOfOverlappingSetsEstimatesTheUnion) {
  // [0, 60,000) and [40,000, 100,000) of one stream: 100,000 ids, 20,000 in both.
  FleetSketch a = SketchOf(60'000, 7), b = SketchOf(60'000, 7, 40'000);
  const FleetSketch b_alone = b;
  a.Merge(b);
  EXPECT_LT(RelativeError(a, 100'000), 0.04) << a.Estimate();
  // A union is the same whichever way it is taken, and taking it again changes nothing.
  b.Merge(SketchOf(60'000, 7));
  EXPECT_EQ(a, b);
  a.Merge(b_alone);
  EXPECT_EQ(a, b);
  // A sketch of the whole set is the union's.
  EXPECT_EQ(a, SketchOf(100'000, 7));
}

TEST(FleetSketchTest, BytesRoundTripAndAnythingElseIsRefused) {
  const FleetSketch sketch = SketchOf(5'000, 11);
  const std::string bytes = sketch.Bytes();
  ASSERT_EQ(bytes.size(), FleetSketch::kRegisters);
  Result<FleetSketch> back = FleetSketch::FromBytes(bytes);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, sketch);
  EXPECT_FALSE(FleetSketch::FromBytes("").ok());
  EXPECT_FALSE(FleetSketch::FromBytes(bytes.substr(1)).ok());
  EXPECT_FALSE(FleetSketch::FromBytes(bytes + '\0').ok());
  std::string high = bytes;
  high[17] = static_cast<char>(FleetSketch::kMaxRank + 1);  // no 64-bit hash has that rank
  EXPECT_FALSE(FleetSketch::FromBytes(high).ok());
  high[17] = static_cast<char>(FleetSketch::kMaxRank);
  EXPECT_TRUE(FleetSketch::FromBytes(high).ok());
}

TEST(FleetSketchTest, AKeyIsSixteenBytes) {
  EXPECT_FALSE(SketchKeyFromBytes("short").ok());
  Result<SketchKey> key = SketchKeyFromBytes("0123456789abcdef");
  ASSERT_TRUE(key.ok());
  EXPECT_NE(*key, DefaultSketchKey());
}

}  // namespace
}  // namespace cincinnati::server
