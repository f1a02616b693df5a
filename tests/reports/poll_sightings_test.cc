// Who polled at which version (reports/poll_sightings.h): the checks a report passes,
// what it keeps, floods of invented ids that cannot push out the clusters that poll, and
// the sketches replicas share.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "reports/poll_sightings.h"

namespace cincinnati::server {
namespace {

std::string Id(int n) { return fmt::format("00000000-0000-4000-8000-{:012x}", n); }

TEST(PollSightingsTest, APollerHasPolledEnoughTimesLongEnoughAgoAndLately) {
  PollSightings seen(1024);
  for (int64_t t : {1000, 1150, 1300}) seen.Record(Id(1), "4.13.1", t);
  // window 86400 s, 1800 s of age, 3 polls
  EXPECT_TRUE(seen.SeenAt(Id(1), "4.13.1", 2800, 86400, 1800, 3));
  EXPECT_FALSE(seen.SeenAt(Id(1), "4.13.1", 2700, 86400, 1800, 3)) << "first seen only 1,700 s ago";
  EXPECT_FALSE(seen.SeenAt(Id(1), "4.13.1", 2800, 86400, 1800, 4)) << "three polls, not four";
  EXPECT_FALSE(seen.SeenAt(Id(1), "4.13.0", 2800, 86400, 1800, 1)) << "never polled at 4.13.0";
  EXPECT_FALSE(seen.SeenAt(Id(1), "4.13.1", 1300 + 86401, 86400, 1800, 3)) << "the last poll is older than the window";
  EXPECT_FALSE(seen.SeenAt(Id(2), "4.13.1", 2800, 86400, 0, 1)) << "never seen";
  // After its update it polls at 4.13.2: both versions are known.
  seen.Record(Id(1), "4.13.2", 3000);
  EXPECT_TRUE(seen.SeenAt(Id(1), "4.13.1", 3000, 86400, 1800, 3));
  EXPECT_TRUE(seen.SeenAt(Id(1), "4.13.2", 3000, 86400, 0, 1));
  // The case of an id does not matter.
  EXPECT_TRUE(seen.SeenAt("00000000-0000-4000-8000-00000000000A", "4.13.1", 2800, 86400, 0, 0) ==
              seen.SeenAt("00000000-0000-4000-8000-00000000000a", "4.13.1", 2800, 86400, 0, 0));
}

TEST(PollSightingsTest, OnlyUuidsAndPlainVersionsAreKept) {
  PollSightings seen(1024);
  seen.Record("not-a-uuid", "4.13.1", 100);
  seen.Record(Id(1) + "x", "4.13.1", 100);
  seen.Record(Id(2), "4.13.1+build", 100);
  seen.Record(Id(3), std::string(7000, '4'), 100);
  seen.Record(Id(4), "", 100);
  EXPECT_EQ(seen.size(), 0u);
  seen.Record(Id(5), "4.13.0-rc.0", 100);
  EXPECT_EQ(seen.size(), 1u);
}

TEST(PollSightingsTest, EachIdHasADailyAllowanceOfReports) {
  PollSightings seen(1024);
  EXPECT_FALSE(seen.ChargeReport(Id(1), 100, 2)) << "an unknown id has none";
  seen.Record(Id(1), "4.13.1", 100);
  EXPECT_TRUE(seen.ChargeReport(Id(1), 100, 2));
  EXPECT_TRUE(seen.ChargeReport(Id(1), 200, 2));
  EXPECT_FALSE(seen.ChargeReport(Id(1), 300, 2));
  EXPECT_TRUE(seen.ChargeReport(Id(1), 86400 + 10, 2)) << "a new day";
}

// The report intake gives back what a duplicate resend was charged: one report, today's only.
TEST(PollSightingsTest, ARefundGivesBackOneReportChargedThatDay) {
  PollSightings seen(1024);
  seen.RefundReport(Id(1), 100);  // unknown: nothing to give back
  seen.Record(Id(1), "4.13.1", 100);
  seen.RefundReport(Id(1), 100);  // nothing charged yet: the allowance does not grow
  EXPECT_TRUE(seen.ChargeReport(Id(1), 100, 2));
  EXPECT_TRUE(seen.ChargeReport(Id(1), 200, 2));
  EXPECT_FALSE(seen.ChargeReport(Id(1), 300, 2));
  seen.RefundReport(Id(1), 300);
  EXPECT_TRUE(seen.ChargeReport(Id(1), 400, 2)) << "the refunded report";
  EXPECT_FALSE(seen.ChargeReport(Id(1), 500, 2));
  seen.RefundReport(Id(1), 86400 + 10);  // another day than the charges'
  EXPECT_FALSE(seen.ChargeReport(Id(1), 600, 2)) << "a refund on another day gives nothing back to this one";
  EXPECT_TRUE(seen.ChargeReport(Id(1), 86400 + 20, 2)) << "a new day";
  seen.RefundReport(Id(1), 86400 + 30);
  seen.RefundReport(Id(1), 86400 + 40);  // one more than was charged
  EXPECT_TRUE(seen.ChargeReport(Id(1), 86400 + 50, 2));
  EXPECT_TRUE(seen.ChargeReport(Id(1), 86400 + 60, 2));
  EXPECT_FALSE(seen.ChargeReport(Id(1), 86400 + 70, 2));
}

// Versions are kept as hashes, their names (for CountByVersion) only while some id last
// polled at them: a fleet that moves through many versions, with ids coming and going,
// never runs out of names, though each shard has room for only a few.
TEST(PollSightingsTest, AVersionsNameIsKeptWhileSomeIdLastPolledAtIt) {
  PollSightings seen(64 * 4);  // 4 ids, so 4 names, per shard
  int64_t t = 1000;
  for (int v = 0; v < 40; ++v, t += 600) {
    for (int n = 0; n < 400; ++n) seen.Record(Id(n), fmt::format("4.{}.0", v), t);
  }
  t -= 600;
  const std::vector<std::pair<std::string, uint64_t>> latest{{"4.39.0", seen.size()}};
  EXPECT_EQ(seen.CountByVersion(t, 300), latest);
  // Back to a version whose name was let go: named again.
  for (int n = 0; n < 400; ++n) seen.Record(Id(n), "4.38.0", t + 60);
  const std::vector<std::pair<std::string, uint64_t>> back{{"4.38.0", seen.size()}};
  EXPECT_EQ(seen.CountByVersion(t + 60, 30), back);
}

// Times are kept as unsigned 32-bit seconds: good past 2038.
TEST(PollSightingsTest, TimesPast2038AreKept) {
  PollSightings seen(1024);
  const int64_t t = 4102444800;  // 2100-01-01T00:00:00Z
  for (int64_t at : {t - 1000, t - 900, t - 800}) seen.Record(Id(1), "4.13.1", at);
  EXPECT_TRUE(seen.SeenAt(Id(1), "4.13.1", t - 800, 86400, 200, 3));
  EXPECT_FALSE(seen.SeenAt(Id(1), "4.13.1", t - 800, 86400, 201, 3));
}

// Regular clusters poll every 3 minutes; then invented ids flood in, each seen once, or
// twice in a row (the review's attack): the clusters that keep polling stay.
TEST(PollSightingsTest, FloodsOfNewIdsDoNotPushOutClustersThatKeepPolling) {
  PollSightings seen(64 * 100);  // 100 per shard
  int64_t t = 0;
  for (; t <= 1800; t += 180) {
    for (int n = 0; n < 2000; ++n) seen.Record(Id(n), "4.13.1", t);
  }
  for (int n = 1000000; n < 1200000; ++n) seen.Record(Id(n), "4.13.1", t);  // once each
  for (int n = 2000000; n < 2013000; ++n) {  // twice each, at once
    seen.Record(Id(n), "4.13.1", t);
    seen.Record(Id(n), "4.13.1", t);
  }
  int kept = 0;
  for (int n = 0; n < 2000; ++n) kept += seen.SeenAt(Id(n), "4.13.1", t, 86400, 1800, 3);
  EXPECT_EQ(kept, 2000);
  EXPECT_LE(seen.size(), 64u * 100u);
  // Invented ids that wait and poll again are protected too; then the least recently
  // polled go first, and the clusters that went on polling stay.
  for (int round = 0; round < 3; ++round) {
    t += 180;
    for (int n = 0; n < 2000; ++n) seen.Record(Id(n), "4.13.1", t);
    for (int n = 3000000 + round * 3000; n < 3000000 + (round + 1) * 3000; ++n) {
      seen.Record(Id(n), "4.13.1", t);
      seen.Record(Id(n), "4.13.1", t + 61);
    }
  }
  kept = 0;
  for (int n = 0; n < 2000; ++n) kept += seen.SeenAt(Id(n), "4.13.1", t, 86400, 1800, 3);
  EXPECT_GE(kept, 1900) << "at most a few evicted while every shard holds 100";
}

// The sketch pass names what CountByVersion names, counts what it counts, and hashes
// ids with the key given, not the process's salt: two replicas that saw the same ids
// make the same sketches, and the union of their halves is the whole.
TEST(PollSightingsTest, SketchesByVersionAgreeAcrossReplicas) {
  PollSightings a(1 << 14), b(1 << 14);
  for (int n = 0; n < 3000; ++n) {
    const char* version = n < 2000 ? "4.13.1" : "4.13.2";
    a.Record(Id(n), version, 1000 + n % 7);
    if (n % 2 == 0) b.Record(Id(n), version, 1000);
  }
  a.Record(Id(99999), "4.12.0", 10);  // too long ago
  const std::vector<PollSightings::VersionSketch> all = a.SketchByVersion(1010, 600, DefaultSketchKey());
  std::vector<std::pair<std::string, uint64_t>> counts;
  for (const auto& v : all) counts.emplace_back(v.version, v.count);
  EXPECT_EQ(counts, a.CountByVersion(1010, 600));
  ASSERT_EQ(all.size(), 2u);
  for (const auto& v : all) EXPECT_NEAR(v.sketch.Estimate(), double(v.count), 0.03 * double(v.count)) << v.version;

  const std::vector<PollSightings::VersionSketch> half = b.SketchByVersion(1010, 600, DefaultSketchKey());
  ASSERT_EQ(half.size(), 2u);
  for (const auto& v : half) {
    const FleetSketch& whole = (all[0].version == v.version ? all[0] : all[1]).sketch;
    FleetSketch merged = v.sketch;
    merged.Merge(whole);
    EXPECT_EQ(merged, whole) << v.version << ": an id hashes to the same register in both";
  }
  // Another key puts ids elsewhere.
  const SketchKey other = {1, 2};
  EXPECT_NE(a.SketchByVersion(1010, 600, other)[0].sketch, all[0].sketch);
}

TEST(PollSightingsTest, SketchesPastTwoHundredFiftySixVersionsGoToOther) {
  PollSightings seen(4096);
  for (int n = 0; n < 300; ++n) seen.Record(Id(n), fmt::format("1.0.{}", n), 1000);
  const std::vector<PollSightings::VersionSketch> sketches = seen.SketchByVersion(1000, 60, DefaultSketchKey());
  ASSERT_EQ(sketches.size(), 257u);
  EXPECT_EQ(sketches.back().version, "other");
  EXPECT_EQ(sketches.back().count, 44u);
  EXPECT_NEAR(sketches.back().sketch.Estimate(), 44, 2);
  EXPECT_EQ(std::llround(sketches.front().sketch.Estimate()), 1);
}

}  // namespace
}  // namespace cincinnati::server
