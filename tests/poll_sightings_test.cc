// Who polled at which version (server/poll_sightings.h): the checks a report passes,
// what it keeps, and floods of invented ids that cannot push out the clusters that poll.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "server/poll_sightings.h"

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

}  // namespace
}  // namespace cincinnati::server
