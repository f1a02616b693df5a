// The start-order settler (reports/start_order.h): attempts are counted in the order
// they started, never before every earlier one can be, stuck ones as failures, known-bad
// sites apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "reports/start_order.h"

namespace cincinnati::reports {
namespace {

constexpr int64_t kHour = 3600;

TEST(StartOrderTest, ReportsOnlyCountsAnAttemptOnceItsHorizonHasPassed) {
  StartOrderSettler settler({.horizon_secs = 2 * kHour, .starts_announced = false});
  // A failure reported early, of an attempt that started after a slower success.
  settler.Resolve(2, 100, true, false, 700);
  EXPECT_EQ(settler.Settle(700)[0].clusters, 0);
  settler.Resolve(1, 50, false, false, 3650);
  EXPECT_EQ(settler.Settle(2 * kHour + 49)[0].clusters, 0);
  SequentialCounts c = settler.Settle(2 * kHour + 50)[0];  // the success first, in start order
  EXPECT_EQ(c.clusters, 1);
  EXPECT_EQ(c.failures, 0);
  c = settler.Settle(2 * kHour + 100)[0];
  EXPECT_EQ(c.clusters, 2);
  EXPECT_EQ(c.failures, 1);
  EXPECT_EQ(settler.late(), 0);
}

TEST(StartOrderTest, AnnouncedStartsCountUnresolvedAttemptsAsSuccessesUntilTheyResolve) {
  StartOrderSettler settler({.horizon_secs = 2 * kHour, .starts_announced = true, .lags_secs = {0}});
  settler.Start(1, 0, false, 0);
  settler.Start(2, 10, false, 10);
  settler.Start(3, 20, false, 20);
  SequentialCounts c = settler.Settle(30)[0];
  EXPECT_EQ(c.clusters, 3);
  EXPECT_EQ(c.failures, 0);
  settler.Resolve(3, 20, true, false, 40);  // a later start's failure counts at once
  c = settler.Settle(40)[0];
  EXPECT_EQ(c.clusters, 3);
  EXPECT_EQ(c.failures, 1);
  settler.Resolve(1, 0, false, false, 50);
  settler.Resolve(1, 0, false, false, 60);  // a resend changes nothing
  c = settler.Settle(60)[0];
  EXPECT_EQ(c.clusters, 3);
  EXPECT_EQ(c.failures, 1);
}

TEST(StartOrderTest, EachLagJudgesThePrefixStartedThatLongAgo) {
  StartOrderSettler settler({.horizon_secs = 2 * kHour, .starts_announced = true, .lags_secs = {0, kHour}});
  for (uint64_t i = 0; i < 10; ++i) settler.Start(i, static_cast<int64_t>(i) * 600, false, static_cast<int64_t>(i) * 600);
  settler.Resolve(0, 0, true, false, 5400);     // in both prefixes
  settler.Resolve(8, 4800, true, false, 5400);  // started 10 min ago: lag 0's only
  std::vector<SequentialCounts> views = settler.Settle(5400);
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[0].clusters, 10);
  EXPECT_EQ(views[0].failures, 2);
  EXPECT_EQ(views[1].clusters, 4);  // started at 0, 600, 1200, 1800
  EXPECT_EQ(views[1].failures, 1);
  // Two attempts final (started at 0 and 600; the unresolved one is stuck), both cuts
  // give them up; lag 1 h now reaches the start at 4200.
  views = settler.Settle(2 * kHour + 600);
  EXPECT_EQ(views[0].clusters, 10);
  EXPECT_EQ(views[0].failures, 3);
  EXPECT_EQ(views[1].clusters, 8);
  EXPECT_EQ(views[1].failures, 2);
  settler.Resolve(5, 3000, true, false, 2 * kHour + 600);
  views = settler.Settle(2 * kHour + 600);
  EXPECT_EQ(views[0].failures, 4);
  EXPECT_EQ(views[1].failures, 3);
  views = settler.Settle(10 * kHour);  // all final; the unresolved ones stuck
  EXPECT_EQ(views[0].clusters, 10);
  EXPECT_EQ(views[0].failures, 10);
  EXPECT_EQ(views[1].failures, 10);
}

TEST(StartOrderTest, AnAttemptUnresolvedPastTheHorizonIsAFailureAndStaysOne) {
  StartOrderSettler settler({.horizon_secs = kHour, .starts_announced = true, .lags_secs = {0}});
  settler.Start(7, 0, false, 0);
  EXPECT_EQ(settler.Settle(kHour - 1)[0].failures, 0);
  SequentialCounts c = settler.Settle(kHour)[0];
  EXPECT_EQ(c.clusters, 1);
  EXPECT_EQ(c.failures, 1);
  settler.Resolve(7, 0, false, false, kHour + 5);  // its success comes too late
  c = settler.Settle(kHour + 5)[0];
  EXPECT_EQ(c.clusters, 1);
  EXPECT_EQ(c.failures, 1);
  EXPECT_EQ(settler.late(), 1);
}

TEST(StartOrderTest, ALateReportWithoutAnnouncedStartIsCountedAsItComes) {
  StartOrderSettler settler({.horizon_secs = kHour, .starts_announced = false});
  EXPECT_EQ(settler.Settle(5 * kHour)[0].clusters, 0);
  settler.Resolve(1, 0, true, false, 5 * kHour);
  const SequentialCounts c = settler.Settle(5 * kHour)[0];
  EXPECT_EQ(c.clusters, 1);
  EXPECT_EQ(c.failures, 1);
  EXPECT_EQ(settler.late(), 1);
}

TEST(StartOrderTest, KnownBadSitesAreKeptApartAsTheBaseline) {
  StartOrderSettler settler({.horizon_secs = kHour, .starts_announced = true, .lags_secs = {0}});
  settler.Start(1, 0, true, 0);
  settler.Start(2, 0, false, 0);
  settler.Resolve(1, 0, true, true, 100);
  settler.Resolve(2, 0, false, false, 200);
  const SequentialCounts c = settler.Settle(2 * kHour)[0];
  EXPECT_EQ(c.clusters, 1);
  EXPECT_EQ(c.failures, 0);
  EXPECT_EQ(c.excluded, 1);
  EXPECT_EQ(c.excluded_failures, 1);
}

TEST(StartOrderTest, TimeNeverGoesBack) {
  StartOrderSettler settler({.horizon_secs = kHour, .starts_announced = false});
  settler.Resolve(1, 0, false, false, 100);
  EXPECT_EQ(settler.Settle(2 * kHour)[0].clusters, 1);
  EXPECT_EQ(settler.Settle(0)[0].clusters, 1);
}

struct Attempt {
  int64_t start, reported;
  bool failed;
};

// A rollout whose failures are reported before its successes: starts over 2 hours,
// updates of 30-90 minutes, a failure reported where it shows plus a 10-minute grace.
std::vector<Attempt> EarlyFailureRollout(std::mt19937_64& random, int clusters, double rate) {
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<Attempt> out;
  for (int i = 0; i < clusters; ++i) {
    const auto start = static_cast<int64_t>(unit(random) * 2 * kHour);
    const auto length = static_cast<int64_t>(1800 + unit(random) * 3600);
    const bool failed = unit(random) < rate;
    out.push_back({start, start + (failed ? static_cast<int64_t>(unit(random) * length) + 600 : length), failed});
  }
  return out;
}

bool BrakesInStartOrder(const std::vector<Attempt>& attempts) {
  struct Event {
    int64_t t;
    size_t who;
    bool report;
  };
  std::vector<Event> events;
  for (size_t i = 0; i < attempts.size(); ++i) {
    events.push_back({attempts[i].start, i, false});
    events.push_back({attempts[i].reported, i, true});
  }
  std::sort(events.begin(), events.end(), [](const Event& x, const Event& y) { return x.t < y.t; });
  StartOrderSettler settler({.horizon_secs = 2 * kHour, .starts_announced = true});
  for (const Event& e : events) {
    const Attempt& a = attempts[e.who];
    if (e.report) settler.Resolve(e.who, a.start, a.failed, false, e.t);
    else settler.Start(e.who, a.start, false, e.t);
    for (const SequentialCounts& view : settler.Settle(e.t)) {
      if (view.failures > 0.05 * static_cast<double>(view.clusters) && EvaluateSequential(view, BrakeRule{}).brake) return true;
    }
  }
  return false;
}

bool BrakesInReportOrder(std::vector<Attempt> attempts) {
  std::sort(attempts.begin(), attempts.end(), [](const Attempt& x, const Attempt& y) { return x.reported < y.reported; });
  SequentialCounts counts;
  for (const Attempt& a : attempts) {
    ++counts.clusters;
    counts.failures += a.failed;
    if (counts.failures > 0.05 * static_cast<double>(counts.clusters) && EvaluateSequential(counts, BrakeRule{}).brake) {
      return true;
    }
  }
  return false;
}

// The same sequential rule, on the same rollouts of an edge failing 4 % (under the 5 %
// threshold): fed in report order it brakes most of them; fed in start order by the
// settler, at most its 5 %.
TEST(StartOrderTest, StartOrderRemovesTheBiasOfFailuresReportedFirst) {
  std::mt19937_64 random(2026);
  const int rollouts = 200;
  int start_order = 0, report_order = 0;
  for (int r = 0; r < rollouts; ++r) {
    const std::vector<Attempt> attempts = EarlyFailureRollout(random, 1000, 0.04);
    start_order += BrakesInStartOrder(attempts);
    report_order += BrakesInReportOrder(attempts);
  }
  RecordProperty("start_order_brakes", start_order);
  RecordProperty("report_order_brakes", report_order);
  EXPECT_LE(start_order, rollouts * 0.05);
  EXPECT_GE(report_order, rollouts / 2) << start_order;
}

// And the settler does not cost the brake of a bad edge: 20 % is braked in every rollout,
// on the first 300 clusters' reports.
TEST(StartOrderTest, ABadEdgeIsStillBraked) {
  std::mt19937_64 random(7);
  for (int r = 0; r < 20; ++r) EXPECT_TRUE(BrakesInStartOrder(EarlyFailureRollout(random, 300, 0.20))) << r;
}

}  // namespace
}  // namespace cincinnati::reports
