// The clusters a policy engine saw polling, by version, over time
// (policy_engine/adoption_history.h and PollSightings::CountByVersion): what a sample counts,
// when samples are taken, and the bounds.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <thread>

#include "policy_engine/adoption_history.h"
#include "reports/poll_sightings.h"

namespace cincinnati::server {
namespace {

std::string Id(int n) { return fmt::format("00000000-0000-4000-8000-{:012x}", n); }

using Counts = std::vector<std::pair<std::string, uint64_t>>;
Counts Sorted(Counts c) {
  std::sort(c.begin(), c.end());
  return c;
}

TEST(AdoptionHistoryTest, ASampleCountsEachRecentPollerAtTheVersionItLastPolledAt) {
  PollSightings seen(4096);
  for (int n = 0; n < 30; ++n) seen.Record(Id(n), "4.13.1", 1000);
  for (int n = 0; n < 20; ++n) seen.Record(Id(n), "4.13.2", 2000);  // updated
  seen.Record(Id(100), "4.12.9", 100);                              // last seen long ago
  seen.Record("not-a-uuid", "4.13.1", 2000);                        // not kept
  EXPECT_EQ(Sorted(seen.CountByVersion(2000, 1500)), (Counts{{"4.13.1", 10}, {"4.13.2", 20}}));
  EXPECT_EQ(Sorted(seen.CountByVersion(2000, 86400)), (Counts{{"4.12.9", 1}, {"4.13.1", 10}, {"4.13.2", 20}}));
  // A cluster that went back to its old version counts there again.
  seen.Record(Id(0), "4.13.1", 2100);
  EXPECT_EQ(Sorted(seen.CountByVersion(2100, 1500)), (Counts{{"4.13.1", 11}, {"4.13.2", 19}}));
}

TEST(AdoptionHistoryTest, PastTwoHundredFiftySixVersionsTheRestAreOther) {
  PollSightings seen(4096);
  for (int n = 0; n < 300; ++n) seen.Record(Id(n), fmt::format("1.0.{}", n), 1000);
  const Counts counts = seen.CountByVersion(1000, 60);
  ASSERT_EQ(counts.size(), 257u);
  EXPECT_EQ(counts.back(), (std::pair<std::string, uint64_t>{"other", 44}));
}

TEST(AdoptionHistoryTest, ASampleIsTakenOncePerPeriodByThePollThatFindsItDue) {
  PollSightings seen(4096);
  AdoptionHistory history({.period = 600, .window = 86400, .capacity = 3});
  EXPECT_EQ(history.Json(), R"({"periodSeconds":600,"windowSeconds":86400,"samples":[]})");
  seen.Record(Id(1), "4.13.1", 1000);
  history.MaybeSample(seen, 1000);  // the first poll samples
  seen.Record(Id(2), "4.13.1", 1100);
  history.MaybeSample(seen, 1100);  // not due until 1200, the next multiple of 600
  seen.Record(Id(2), "4.13.2", 1200);
  history.MaybeSample(seen, 1200);
  EXPECT_EQ(history.Json(), R"({"periodSeconds":600,"windowSeconds":86400,"samples":[)"
                            R"({"time":"1970-01-01T00:16:40Z","clusters":{"4.13.1":1}},)"
                            R"({"time":"1970-01-01T00:20:00Z","clusters":{"4.13.1":1,"4.13.2":1}}]})");
  // Only `capacity` samples are kept, the oldest dropped.
  for (int64_t t : {1800, 2400, 3000}) history.MaybeSample(seen, t);
  const std::string json = history.Json();
  EXPECT_EQ(json.find("00:20:00Z"), std::string::npos) << json;
  EXPECT_NE(json.find("00:30:00Z"), std::string::npos) << json;
  EXPECT_NE(json.find("00:50:00Z"), std::string::npos) << json;
  // A clock that went back more than a period starts the history over.
  history.MaybeSample(seen, 100);
  EXPECT_EQ(history.Json(), R"({"periodSeconds":600,"windowSeconds":86400,"samples":[)"
                            R"({"time":"1970-01-01T00:01:40Z","clusters":{}}]})");
}

TEST(AdoptionHistoryTest, ManyPollsAtOnceTakeOneSample) {
  PollSightings seen(4096);
  AdoptionHistory history({.period = 600});
  std::vector<std::thread> threads;
  for (int k = 0; k < 8; ++k) {
    threads.emplace_back([&, k] {
      for (int n = 0; n < 200; ++n) {
        seen.Record(Id(k * 1000 + n), "4.13.1", 5000);
        history.MaybeSample(seen, 5000);
      }
    });
  }
  for (auto& t : threads) t.join();
  const std::string json = history.Json();
  size_t samples = 0;
  for (size_t at = json.find("\"time\""); at != std::string::npos; at = json.find("\"time\"", at + 1)) ++samples;
  EXPECT_EQ(samples, 1u) << json;
}

}  // namespace
}  // namespace cincinnati::server
