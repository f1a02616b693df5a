// The brake board deciding with the sequential rule (brakes.rule = "sequential";
// brake_board.h) on a real state directory and a manual clock: a bad edge is braked in
// start order with a message stating its rate and the known-bad sites'; attempts that
// never end are judged as they cross the horizon, without a new report (Redecide); the
// Wilson rule ignores starts; an unknown rule is refused by name.
#include <gtest/gtest.h>

#include "env/clock.h"
#include "http_server/metrics.h"
#include "reports/brake_board.h"
#include "reports/test_graph.h"
#include "test_util.h"
#include "update_report_util.h"

namespace cincinnati::reports {
namespace {

using namespace std::chrono_literals;

class SequentialBoardTest : public ::testing::Test {
 protected:
  std::unique_ptr<BrakeBoard> Open(BrakeRuleKind kind) {
    BrakeSettings settings;
    settings.kind = kind;
    settings.url_base = "https://updates.example.com/api/upgrades_info/v1/brakes";
    auto board = BrakeBoard::Open(dir_.path().string(), settings, clock_, metrics_);
    EXPECT_TRUE(board.ok()) << board.status().message();
    if (!board.ok()) return nullptr;
    (*board)->SetGraph(TestGraph());
    return std::move(*board);
  }
  int64_t Now() const { return env::UnixSeconds(clock_); }
  UpdateReport Started(int n) {
    UpdateReport r = testing::TestReport(n, false, "a", Now(), "");
    r.result = UpdateResult::kStarted;
    r.ended = 0;
    return r;
  }
  // Started reports of clusters 1..count, now.
  std::vector<UpdateReport> StartsOf(int count) {
    std::vector<UpdateReport> starts;
    for (int n = 1; n <= count; ++n) starts.push_back(Started(n));
    return starts;
  }
  UpdateReport Ended(int n, int64_t started, bool failed) {
    UpdateReport r = testing::TestReport(n, failed, "a", started, "network");
    r.ended = Now();
    return r;
  }
  testing::TempDir dir_;
  env::ManualClock clock_;
  http_server::Registry metrics_{"cincinnati_gb_"};
};

TEST_F(SequentialBoardTest, ABadEdgeIsBrakedInStartOrderAndTheMessageStatesBothRates) {
  auto board = Open(BrakeRuleKind::kSequential);
  ASSERT_TRUE(board);
  // Two clusters failed their previous update, elsewhere: known-bad sites.
  std::vector<UpdateReport> elsewhere;
  for (int n : {101, 102}) {
    UpdateReport r = testing::TestReport(n, true, "b", Now(), "network", "4.13.3", "4.13.4");
    r.channel = "fast-4.13";
    r.ended = Now();
    elsewhere.push_back(r);
  }
  auto taken = board->Submit(elsewhere);
  ASSERT_TRUE(taken.ok());
  for (const ReportVerdict& v : *taken) ASSERT_NE(v.kind, ReportVerdict::Kind::kRefused) << v.why;
  const int64_t t0 = Now();
  std::vector<UpdateReport> starts = StartsOf(60);
  starts.push_back(Started(101));
  starts.push_back(Started(102));
  ASSERT_TRUE(board->Submit(starts).ok());
  EXPECT_TRUE(board->InForce().empty()) << "starts alone brake nothing";
  clock_.Advance(20min);
  ASSERT_TRUE(board->Submit({Ended(101, t0, true), Ended(102, t0, true)}).ok());
  EXPECT_TRUE(board->InForce().empty()) << "the known-bad sites' failures are not the edge's";
  // One in three fails: far above 5 %.
  for (int n = 1; n <= 60 && board->InForce().empty(); ++n) ASSERT_TRUE(board->Submit({Ended(n, t0, n % 3 == 0)}).ok());
  ASSERT_EQ(board->InForce().size(), 1u);
  const BrakeRecord brake = board->List().at(0);
  EXPECT_EQ(brake.from, "4.13.1");
  EXPECT_EQ(brake.to, "4.13.2");
  EXPECT_GE(brake.counts.failures, 3);
  EXPECT_EQ(brake.counts.clusters, 60) << "in start order, the attempts still running count as successes for now";
  EXPECT_NE(brake.message.find(fmt::format("{} of 60 clusters that updated from 4.13.1 to 4.13.2 failed", brake.counts.failures)),
            std::string::npos)
      << brake.message;
  EXPECT_NE(brake.message.find("clusters whose previous update failed, not counted: 2 of 2, 100.0%"), std::string::npos)
      << brake.message;
  EXPECT_NE(brake.message.find("more than 5% with 95% confidence over the whole rollout"), std::string::npos) << brake.message;
  EXPECT_NE(brake.evidence.find("in the order they started"), std::string::npos) << brake.evidence;
}

TEST_F(SequentialBoardTest, AttemptsThatNeverEndAreJudgedStuckOnceTheHorizonPasses) {
  auto board = Open(BrakeRuleKind::kSequential);
  ASSERT_TRUE(board);
  ASSERT_TRUE(board->Submit(StartsOf(30)).ok());
  clock_.Advance(std::chrono::seconds(kStartHorizon - 60));
  auto early = board->Redecide();
  ASSERT_TRUE(early.ok()) << early.status().message();
  EXPECT_TRUE(early->empty()) << "within the horizon they may still end well";
  EXPECT_TRUE(board->InForce().empty());
  clock_.Advance(2min);
  auto late = board->Redecide();
  ASSERT_TRUE(late.ok()) << late.status().message();
  ASSERT_EQ(late->size(), 1u) << "30 clusters stuck past the horizon: failures, braked without a new report";
  EXPECT_EQ((*late)[0].counts.clusters, 30);
  EXPECT_EQ((*late)[0].counts.failures, 30);
  EXPECT_NE((*late)[0].message.find("30 of 30 clusters that updated from 4.13.1 to 4.13.2 failed (100.0%"), std::string::npos)
      << (*late)[0].message;
  EXPECT_NE((*late)[0].message.find("most often on attempts that never ended."), std::string::npos) << (*late)[0].message;
  EXPECT_EQ(board->InForce().size(), 1u);
}

TEST_F(SequentialBoardTest, TheWilsonRuleIgnoresStartsAndDoesNotRedecide) {
  auto board = Open(BrakeRuleKind::kWilson);
  ASSERT_TRUE(board);
  ASSERT_TRUE(board->Submit(StartsOf(30)).ok());
  clock_.Advance(std::chrono::seconds(kStartHorizon + 60));
  auto redecided = board->Redecide();
  ASSERT_TRUE(redecided.ok());
  EXPECT_TRUE(redecided->empty());
  EXPECT_TRUE(board->InForce().empty());
  EXPECT_EQ(board->store().Edge("4.13.1", "4.13.2").counts.clusters, 0);
}

TEST(BrakeRuleKindTest, OnlySequentialAndWilsonAreAccepted) {
  EXPECT_EQ(*ParseBrakeRuleKind("sequential"), BrakeRuleKind::kSequential);
  EXPECT_EQ(*ParseBrakeRuleKind("wilson"), BrakeRuleKind::kWilson);
  auto bad = ParseBrakeRuleKind("bayes");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("brakes.rule 'bayes'"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("\"sequential\""), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("\"wilson\""), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace cincinnati::reports
