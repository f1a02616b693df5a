// The graph builder's ledger of update reports (reports/report_ledger.h) on a real
// SQLite file: duplicates, distinct clusters per edge, which failures count, and what
// survives a reopen and a process killed right after a commit.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "reports/ledger_file.h"
#include "reports/report_ledger.h"
#include "test_util.h"
#include "update_report_util.h"

namespace cincinnati::reports {
namespace {

using Outcome = ReportLedger::Outcome;

// When the graph builder received the test's reports: after every attempt began.
constexpr int64_t kReceived = 1767500000;

UpdateReport Report(int cluster, const std::string& attempt, UpdateResult result, const std::string& reason = "",
                    const std::string& component = "", const std::string& from = "4.13.1", const std::string& to = "4.13.2") {
  UpdateReport r = testing::TestReport(cluster, result == UpdateResult::kFailed, attempt, 1767411672 + cluster, component, from, to);
  r.reason = reason;  // any reason, counted or not
  r.component = component;
  r.ended = r.started + 600;
  return r;
}

class ReportLedgerTest : public testing::LedgerFileTest {};

TEST_F(ReportLedgerTest, AResentReportIsADuplicateAndCountsOnce) {
  auto ledger = Open();
  const UpdateReport failed = Report(1, "a1", UpdateResult::kFailed, "ClusterOperatorDegraded", "network");
  auto first = ledger->Record({failed, Report(2, "b1", UpdateResult::kCompleted)}, kReceived + 100);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(*first, (std::vector<Outcome>{Outcome::kRecorded, Outcome::kRecorded}));
  auto again = ledger->Record({failed, failed}, kReceived + 200);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, (std::vector<Outcome>{Outcome::kDuplicate, Outcome::kDuplicate}));
  const EdgeState edge = ledger->Edge("4.13.1", "4.13.2");
  EXPECT_EQ(edge.counts.clusters, 2);
  EXPECT_EQ(edge.counts.failures, 1);
  EXPECT_EQ(ledger->reports(), 2);
}

TEST_F(ReportLedgerTest, ClustersAreDistinctPerEdgeAndAFailureThatCountsStaysCounted) {
  auto ledger = Open();
  ASSERT_TRUE(ledger->Record({
      Report(1, "a1", UpdateResult::kFailed, "ClusterOperatorDegraded", "network"),
      Report(1, "a2", UpdateResult::kCompleted),  // the same cluster, a later attempt: still failed
      Report(2, "b1", UpdateResult::kFailed, "ImageVerificationFailed"),  // refused before applying: not counted
      Report(2, "b2", UpdateResult::kFailed, "ClusterOperatorNotAvailable", "etcd"),  // now it counts
      Report(3, "c1", UpdateResult::kFailed, "ClusterOperatorDegraded", "network"),
      Report(4, "d1", UpdateResult::kCompleted),
      Report(4, "d2", UpdateResult::kFailed, "ClusterOperatorDegraded", "dns", "4.13.2", "4.13.3"),
  }, kReceived + 100).ok());
  const EdgeState edge = ledger->Edge("4.13.1", "4.13.2");
  EXPECT_EQ(edge.counts.clusters, 4);
  EXPECT_EQ(edge.counts.failures, 3);
  EXPECT_EQ(edge.failed_components, (std::map<std::string, int64_t>{{"etcd", 1}, {"network", 2}}));
  EXPECT_EQ(edge.first_failure, kReceived + 100) << "when the report arrived, not what the reporter wrote";
  EXPECT_EQ(ledger->Edge("4.13.2", "4.13.3").counts.failures, 1);
  EXPECT_EQ(ledger->Edge("4.12.0", "4.13.0").counts.clusters, 0);
  EXPECT_EQ(ledger->Edges().size(), 2u);
  EXPECT_FALSE(ledger->Counted(Report(5, "e", UpdateResult::kFailed, "RetrievePayload")));
}

TEST_F(ReportLedgerTest, AnInvalidReportRefusesTheWholeBatch) {
  auto ledger = Open();
  UpdateReport bad = Report(2, "b1", UpdateResult::kFailed, "");  // Failed needs a reason
  auto r = ledger->Record({Report(1, "a1", UpdateResult::kCompleted), bad}, kReceived + 100);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "update report: a 'Failed' report needs a 'reason'");
  EXPECT_EQ(ledger->reports(), 0);
  EXPECT_EQ(ledger->Edge("4.13.1", "4.13.2").counts.clusters, 0);
}

TEST_F(ReportLedgerTest, CountsSurviveAReopenAndAKillRightAfterTheCommit) {
  {
    auto ledger = Open();
    ASSERT_TRUE(ledger->Record({Report(1, "a1", UpdateResult::kFailed, "ClusterOperatorDegraded", "network")}, kReceived + 100).ok());
  }
  // A child records a batch and is killed at once (no destructor, no close).
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto ledger = ReportLedger::Open((dir_ / "reports.db").string());
    if (!ledger.ok()) _exit(2);
    if (!(*ledger)->Record({Report(2, "b1", UpdateResult::kCompleted), Report(3, "c1", UpdateResult::kFailed, "ClusterOperatorDegraded", "etcd")}, kReceived + 200).ok()) {
      _exit(3);
    }
    raise(SIGKILL);
    _exit(4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "exit " << WEXITSTATUS(status);
  auto ledger = Open();
  const EdgeState edge = ledger->Edge("4.13.1", "4.13.2");
  EXPECT_EQ(edge.counts.clusters, 3);
  EXPECT_EQ(edge.counts.failures, 2);
  EXPECT_EQ(edge.failed_components, (std::map<std::string, int64_t>{{"etcd", 1}, {"network", 1}}));
  EXPECT_EQ(ledger->reports(), 3);
  auto again = ledger->Record({Report(3, "c1", UpdateResult::kFailed, "ClusterOperatorDegraded", "etcd")}, kReceived + 300);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->front(), Outcome::kDuplicate);
}

TEST_F(ReportLedgerTest, FutureDatedReportsAndReportsBeforeARestartDoNotCount) {
  auto ledger = Open();
  UpdateReport future = Report(1, "a1", UpdateResult::kFailed, "ClusterOperatorDegraded", "network");
  ASSERT_TRUE(ledger->Record({future}, future.started - kMaxClockSkew - 1).ok());
  EXPECT_EQ(ledger->Edge("4.13.1", "4.13.2").counts.clusters, 0) << "dated after it was received";
  EXPECT_EQ(ledger->reports(), 1);
  ASSERT_TRUE(ledger->Record({Report(2, "b1", UpdateResult::kFailed, "ClusterOperatorDegraded", "network")}, kReceived).ok());
  ASSERT_EQ(ledger->Edge("4.13.1", "4.13.2").counts.failures, 1);
  // A person cleared the edge's brake at kReceived + 10: what came before no longer counts,
  // nor does a late report of an attempt that began before, nor one whose time claims later.
  ASSERT_TRUE(ledger->RestartEdge("4.13.1", "4.13.2", kReceived + 10).ok());
  EXPECT_EQ(ledger->Edge("4.13.1", "4.13.2").counts.clusters, 0);
  UpdateReport late = Report(3, "c1", UpdateResult::kFailed, "ClusterOperatorDegraded", "network");
  late.started = late.ended = kReceived;
  UpdateReport fresh = Report(4, "d1", UpdateResult::kFailed, "ClusterOperatorDegraded", "network");
  fresh.started = fresh.ended = kReceived + 20;
  ASSERT_TRUE(ledger->Record({late, fresh}, kReceived + 30).ok());
  EXPECT_EQ(ledger->Edge("4.13.1", "4.13.2").counts.clusters, 1);
  // Reopened, the restart holds.
  ledger.reset();
  ledger = Open();
  EXPECT_EQ(ledger->Edge("4.13.1", "4.13.2").counts.clusters, 1);
}

TEST_F(ReportLedgerTest, AFileThatIsNotADatabaseIsAnErrorNamingIt) {
  testing::WriteFile(dir_ / "reports.db", std::string(8192, 'x'));
  auto ledger = ReportLedger::Open((dir_ / "reports.db").string());
  ASSERT_FALSE(ledger.ok());
  EXPECT_NE(ledger.status().message().find((dir_ / "reports.db").string()), std::string::npos) << ledger.status().message();
}

}  // namespace
}  // namespace cincinnati::reports
