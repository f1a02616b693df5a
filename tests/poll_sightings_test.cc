// Who polled at which version (server/poll_sightings.h): the checks a report passes, and
// a flood of invented ids that cannot push out the clusters that poll.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "server/poll_sightings.h"

namespace cincinnati::server {
namespace {

std::string Id(int n) { return fmt::format("00000000-0000-4000-8000-{:012x}", n); }

TEST(PollSightingsTest, AReportNeedsARecentPollAtFromThatStartedBeforeTheAttempt) {
  PollSightings seen(1024);
  seen.Record(Id(1), "4.13.1", 1000);
  seen.Record(Id(1), "4.13.1", 5000);
  EXPECT_TRUE(seen.SawAt(Id(1), "4.13.1", /*started=*/3000, /*now=*/6000, /*window=*/86400, /*min_age=*/1800));
  EXPECT_FALSE(seen.SawAt(Id(1), "4.13.1", 2000, 6000, 86400, 1800)) << "first seen only 1,000 s before the attempt";
  EXPECT_FALSE(seen.SawAt(Id(1), "4.13.0", 3000, 6000, 86400, 1800)) << "never polled at 4.13.0";
  EXPECT_FALSE(seen.SawAt(Id(1), "4.13.1", 3000, 5000 + 86401, 86400, 1800)) << "the last poll is older than the window";
  EXPECT_FALSE(seen.SawAt(Id(2), "4.13.1", 3000, 6000, 86400, 0)) << "never seen";
  // After the update it polls at 4.13.2; a late report about 4.13.1 still passes.
  seen.Record(Id(1), "4.13.2", 7000);
  EXPECT_TRUE(seen.SawAt(Id(1), "4.13.1", 3000, 7000, 86400, 1800));
  EXPECT_TRUE(seen.SawAt(Id(1), "4.13.2", 7000, 7000, 86400, 0));
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

TEST(PollSightingsTest, AFloodOfNewIdsDoesNotPushOutClustersThatPollAgain) {
  PollSightings seen(64 * 100);  // 100 per shard
  for (int n = 0; n < 2000; ++n) {  // regular clusters, each seen twice
    seen.Record(Id(n), "4.13.1", 1000);
    seen.Record(Id(n), "4.13.1", 1100);
  }
  for (int n = 1000000; n < 1200000; ++n) seen.Record(Id(n), "4.13.1", 2000);  // invented ids, once each
  int kept = 0;
  for (int n = 0; n < 2000; ++n) kept += seen.SawAt(Id(n), "4.13.1", 1100, 2000, 86400, 0);
  EXPECT_EQ(kept, 2000);
  EXPECT_LE(seen.size(), 64u * 100u);
}

}  // namespace
}  // namespace cincinnati::server
