// Started reports (an attempt has begun): their wire form (core/update_report.h) and
// how the ledger keeps them (reports/report_ledger.h): once per attempt, clamped into
// the horizon before their receipt, never counted by the Wilson rule.
#include <gtest/gtest.h>

#include "reports/ledger_file.h"
#include "reports/report_ledger.h"
#include "test_util.h"
#include "update_report_util.h"

namespace cincinnati::reports {
namespace {

using Outcome = ReportLedger::Outcome;

constexpr int64_t kReceived = 1767500000;

UpdateReport Started(int cluster, const std::string& attempt, int64_t started) {
  UpdateReport r = testing::TestReport(cluster, false, attempt, started);
  r.result = UpdateResult::kStarted;
  r.component.clear();
  r.reason.clear();
  r.ended = 0;
  return r;
}

UpdateReport Ended(UpdateReport r, bool failed) {
  r.result = failed ? UpdateResult::kFailed : UpdateResult::kCompleted;
  r.reason = failed ? "ClusterOperatorDegraded" : "";
  r.component = failed ? "network" : "";
  r.ended = r.started + 600;
  return r;
}

TEST(StartedReportTest, TheWireFormHasAnEmptyEndAndRoundTrips) {
  const UpdateReport start = Started(1, "a1", kReceived - 60);
  ASSERT_TRUE(ValidateUpdateReport(start).ok()) << ValidateUpdateReport(start).message();
  const std::string json = EncodeUpdateReport(start);
  EXPECT_NE(json.find(R"("result":"Started")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("ended":"")"), std::string::npos) << json;
  auto decoded = DecodeUpdateReport(json);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(*decoded, start);
}

TEST(StartedReportTest, AStartedReportHasNoEndNoComponentAndNoReason) {
  UpdateReport with_end = Started(1, "a1", kReceived);
  with_end.ended = kReceived + 10;
  EXPECT_FALSE(ValidateUpdateReport(with_end).ok());
  UpdateReport with_reason = Started(1, "a1", kReceived);
  with_reason.reason = "ClusterOperatorDegraded";
  EXPECT_FALSE(ValidateUpdateReport(with_reason).ok());
  UpdateReport with_component = Started(1, "a1", kReceived);
  with_component.component = "network";
  EXPECT_FALSE(ValidateUpdateReport(with_component).ok());
  // An end on the wire, or no end for a final report, is refused too.
  std::string json = EncodeUpdateReport(Started(1, "a1", kReceived));
  std::string dated = json;
  dated.replace(dated.find(R"("ended":"")"), 10, R"("ended":"2026-01-04T04:13:20Z")");
  EXPECT_FALSE(DecodeUpdateReport(dated).ok()) << dated;
  std::string completed = json;
  completed.replace(completed.find("Started"), 7, "Completed");
  EXPECT_FALSE(DecodeUpdateReport(completed).ok()) << completed;
}

TEST(StartedReportTest, AStartIsClampedIntoTheHorizonBeforeItsReceipt) {
  EXPECT_EQ(ClampedStart(kReceived - 60, kReceived), kReceived - 60);
  EXPECT_EQ(ClampedStart(kReceived - 86400, kReceived), kReceived - kStartHorizon) << "dated long before: the horizon";
  EXPECT_EQ(ClampedStart(kReceived + 250, kReceived), kReceived) << "dated in the future: now";
}

class StartedLedgerTest : public testing::LedgerFileTest {};

TEST_F(StartedLedgerTest, StartsAreKeptOnceClampedAndSurviveAReopen) {
  const UpdateReport early = Started(1, "a1", kReceived - 86400);  // claims a start a day back
  const UpdateReport late = Started(2, "b1", kReceived + 200);     // and one in the future
  const UpdateReport honest = Started(3, "c1", kReceived - 600);
  {
    auto ledger = Open();
    auto recorded = ledger->Record({early, late, honest, honest}, kReceived);
    ASSERT_TRUE(recorded.ok()) << recorded.status().message();
    EXPECT_EQ(*recorded, (std::vector<Outcome>{Outcome::kRecorded, Outcome::kRecorded, Outcome::kRecorded, Outcome::kDuplicate}));
    EXPECT_EQ(ledger->reports(), 3);
  }
  auto ledger = Open();
  EXPECT_EQ(ledger->reports(), 3);
  auto starts = ledger->Starts(early.from, early.to);
  ASSERT_TRUE(starts.ok()) << starts.status().message();
  ASSERT_EQ(starts->size(), 3u);
  // By start: the clamp put the early one at the horizon, the future one at its receipt.
  EXPECT_EQ((*starts)[0].cluster, early.cluster_id);
  EXPECT_EQ((*starts)[0].started, kReceived - kStartHorizon);
  EXPECT_EQ((*starts)[1].cluster, honest.cluster_id);
  EXPECT_EQ((*starts)[1].started, kReceived - 600);
  EXPECT_EQ((*starts)[2].cluster, late.cluster_id);
  EXPECT_EQ((*starts)[2].attempt, "b1");
  EXPECT_EQ((*starts)[2].started, kReceived);
  EXPECT_EQ((*starts)[2].received, kReceived);
  auto resent = ledger->Record({late}, kReceived + 100);
  ASSERT_TRUE(resent.ok());
  EXPECT_EQ(*resent, std::vector<Outcome>{Outcome::kDuplicate});
}

TEST_F(StartedLedgerTest, TheWilsonCountsIgnoreStartsAndAStartAfterItsEndIsADuplicate) {
  auto ledger = Open();
  const UpdateReport a = Started(1, "a1", kReceived - 900), b = Started(2, "b1", kReceived - 800);
  ASSERT_TRUE(ledger->Record({a, b}, kReceived).ok());
  EXPECT_EQ(ledger->Edge(a.from, a.to).counts.clusters, 0) << "a start alone is not counted";
  ASSERT_TRUE(ledger->Record({Ended(a, true)}, kReceived + 100).ok());
  const EdgeState edge = ledger->Edge(a.from, a.to);
  EXPECT_EQ(edge.counts.clusters, 1);
  EXPECT_EQ(edge.counts.failures, 1);
  // A final report first, its start after: nothing to add.
  const UpdateReport c = Started(3, "c1", kReceived - 700);
  auto ended_first = ledger->Record({Ended(c, false), c}, kReceived + 200);
  ASSERT_TRUE(ended_first.ok());
  EXPECT_EQ(*ended_first, (std::vector<Outcome>{Outcome::kRecorded, Outcome::kDuplicate}));
  EXPECT_EQ(ledger->Edge(a.from, a.to).counts.clusters, 2);
  auto starts = ledger->Starts(a.from, a.to);
  ASSERT_TRUE(starts.ok());
  EXPECT_EQ(starts->size(), 2u);
}

}  // namespace
}  // namespace cincinnati::reports
