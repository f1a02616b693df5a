// The graph builder's brake board (reports/brake_board.h) on a real state directory and
// a manual clock: it brakes an edge when the rule is crossed, once; the brake and its
// file survive a restart; a person confirms or clears it, and a cleared edge needs new
// evidence.
#include <gtest/gtest.h>

#include <filesystem>

#include <fmt/format.h>

#include "env/clock.h"
#include "http_server/metrics.h"
#include "reports/brake_board.h"
#include "test_util.h"
#include "update_report_util.h"

namespace cincinnati::reports {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class BrakeBoardTest : public ::testing::Test {
 protected:
  std::unique_ptr<BrakeBoard> Open() {
    BrakeSettings settings;
    settings.url_base = "https://updates.example.com/api/upgrades_info/v1/brakes";
    auto board = BrakeBoard::Open(dir_.path().string(), settings, clock_, metrics_);
    EXPECT_TRUE(board.ok()) << board.status().message();
    if (!board.ok()) return nullptr;
    (*board)->OnChange([this] { ++changes_; });
    return std::move(*board);
  }
  int64_t Now() const { return std::chrono::duration_cast<std::chrono::seconds>(clock_.Now().time_since_epoch()).count(); }
  // Cluster `n`'s attempt on 4.13.1 -> 4.13.2, started now.
  UpdateReport Attempt(int n, bool failed, const std::string& attempt = "a") {
    return testing::TestReport(n, failed, attempt, Now(), n % 3 == 0 ? "etcd" : "network");
  }
  std::string File() const { return (dir_ / "blocked-edges" / "4.13.2-AutomaticallyBlocked_4_13_1_to_4_13_2.yaml").string(); }

  testing::TempDir dir_;
  env::ManualClock clock_;
  http_server::Registry metrics_{"cincinnati_gb_"};
  int changes_ = 0;
};

TEST_F(BrakeBoardTest, TheEdgeIsBrakedWhenTheRuleIsCrossedAndOnlyOnce) {
  auto board = Open();
  std::vector<UpdateReport> batch;
  for (int n = 1; n <= 17; ++n) batch.push_back(Attempt(n, false));
  batch.push_back(Attempt(18, true));
  batch.push_back(Attempt(19, true));
  ASSERT_TRUE(board->Submit(batch).ok());
  EXPECT_TRUE(board->InForce().empty()) << "2 of 19: under the rule";
  clock_.Advance(10min);
  ASSERT_TRUE(board->Submit({Attempt(20, true)}).ok());  // 3 of 20
  ASSERT_EQ(board->InForce().size(), 1u);
  EXPECT_EQ(changes_, 1);
  const Brake brake = board->InForce()[0];
  EXPECT_EQ(brake.url, "https://updates.example.com/api/upgrades_info/v1/brakes/4.13.1-4.13.2");
  EXPECT_EQ(brake.message,
            "Automatically blocked at 2026-01-01T00:10:00Z: 3 of 20 clusters that updated from 4.13.1 to 4.13.2 failed (95% "
            "confidence that more than 5% fail), most often on network (2). First failure 2026-01-01T00:00:00Z.");
  EXPECT_EQ(testing::ReadFile(File()).find("name: AutomaticallyBlocked_4_13_1_to_4_13_2\n") != std::string::npos, true)
      << testing::ReadFile(File());
  // More failures change nothing: one brake, the same message.
  ASSERT_TRUE(board->Submit({Attempt(21, true), Attempt(22, true)}).ok());
  EXPECT_EQ(changes_, 1);
  EXPECT_EQ(board->InForce()[0].message, brake.message);
  const std::string metrics = metrics_.Render();
  EXPECT_NE(metrics.find("cincinnati_gb_brakes_active 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("cincinnati_gb_brake_actions_total{action=\"applied\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("cincinnati_gb_reports_received_total{result=\"Failed\"} 5\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("cincinnati_gb_brake_delay_seconds_sum 600\n"), std::string::npos) << metrics;
}

TEST_F(BrakeBoardTest, DuplicatesDoNotCountAndNothingIsLostOnARestart) {
  {
    auto board = Open();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(board->Submit({Attempt(1, true), Attempt(2, true), Attempt(3, true)}).ok());
    EXPECT_EQ(board->ledger().Edge("4.13.1", "4.13.2").counts.failures, 3);
    std::vector<UpdateReport> batch;
    for (int n = 4; n <= 20; ++n) batch.push_back(Attempt(n, false));
    ASSERT_TRUE(board->Submit(batch).ok());
    ASSERT_EQ(board->InForce().size(), 1u);
    EXPECT_NE(metrics_.Render().find("cincinnati_gb_reports_duplicate_total 12\n"), std::string::npos) << metrics_.Render();
  }
  fs::remove(File());  // lost, as to a full disk at the decision
  auto board = Open();
  ASSERT_EQ(board->InForce().size(), 1u);
  EXPECT_TRUE(fs::exists(File())) << "the file of a brake in force is written again";
  EXPECT_EQ(board->ledger().Edge("4.13.1", "4.13.2").counts.clusters, 20);
}

TEST_F(BrakeBoardTest, APersonConfirmsOrClearsAndAClearedEdgeNeedsNewEvidence) {
  auto board = Open();
  std::vector<UpdateReport> batch;
  for (int n = 1; n <= 20; ++n) batch.push_back(Attempt(n, n <= 4));
  ASSERT_TRUE(board->Submit(batch).ok());
  ASSERT_EQ(board->InForce().size(), 1u);
  EXPECT_EQ(board->Confirm("4.13.1", "4.13.2", "", "").message(), "say who you are ('by')");
  EXPECT_EQ(board->Confirm("4.13.0", "4.13.2", "alice", "").code(), Status::Code::kNotFound);
  ASSERT_TRUE(board->Confirm("4.13.1", "4.13.2", "alice", "OCPBUGS-1").ok());
  EXPECT_NE(testing::ReadFile(File()).find("# Confirmed by alice: OCPBUGS-1."), std::string::npos) << testing::ReadFile(File());
  EXPECT_EQ(changes_, 1) << "confirming changes the file, not the graph";

  clock_.Advance(1h);
  ASSERT_TRUE(board->Clear("4.13.1", "4.13.2", "bob", "fixed in 4.13.3").ok());
  EXPECT_TRUE(board->InForce().empty());
  EXPECT_FALSE(fs::exists(File()));
  EXPECT_EQ(changes_, 2);
  EXPECT_EQ(board->Clear("4.13.1", "4.13.2", "bob", "").code(), Status::Code::kNotFound);
  // Late reports of attempts that started before the clear do not count again.
  clock_.Advance(1min);
  std::vector<UpdateReport> late;
  for (int n = 21; n <= 40; ++n) {
    UpdateReport r = Attempt(n, true);
    r.started -= 7200;
    late.push_back(r);
  }
  ASSERT_TRUE(board->Submit(late).ok());
  EXPECT_TRUE(board->InForce().empty());
  EXPECT_EQ(board->ledger().Edge("4.13.1", "4.13.2").counts.clusters, 0);
  // New attempts do.
  std::vector<UpdateReport> fresh;
  for (int n = 41; n <= 60; ++n) fresh.push_back(Attempt(n, n <= 44));
  ASSERT_TRUE(board->Submit(fresh).ok());
  ASSERT_EQ(board->InForce().size(), 1u);
  EXPECT_EQ(changes_, 3);
  const std::vector<BrakeRecord> listed = board->List();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].state, BrakeState::kActive);
  EXPECT_EQ(listed[0].counts.clusters, 20);
}

}  // namespace
}  // namespace cincinnati::reports
