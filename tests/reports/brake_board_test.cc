// The graph builder's brake board (reports/brake_board.h) on a real state directory and
// a manual clock: it brakes an edge when the rule is crossed, once; the brake and its
// file survive a restart; a person confirms or clears it, and a cleared edge needs new
// evidence.
#include <gtest/gtest.h>

#include <filesystem>

#include <fmt/format.h>

#include "env/clock.h"
#include "http_server/metrics.h"
#include "core/graph_json.h"
#include "graph-data/lint.h"
#include "reports/brake_board.h"
#include "reports/test_graph.h"
#include "test_util.h"
#include "update_report_util.h"

namespace cincinnati::reports {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class BrakeBoardTest : public ::testing::Test {
 protected:
  std::unique_ptr<BrakeBoard> Open(bool with_graph = true) {
    BrakeSettings settings;
    // The board's mechanics (files, restarts, confirm and clear) on the Wilson rule's
    // small numbers; sequential_board_test.cc brakes with the default rule.
    settings.kind = BrakeRuleKind::kWilson;
    settings.url_base = "https://updates.example.com/api/upgrades_info/v1/brakes";
    auto board = BrakeBoard::Open(dir_.path().string(), settings, clock_, metrics_);
    EXPECT_TRUE(board.ok()) << board.status().message();
    if (!board.ok()) return nullptr;
    (*board)->OnChange([this] { ++changes_; });
    if (with_graph) (*board)->SetGraph(TestGraph());
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
    EXPECT_EQ(board->store().Edge("4.13.1", "4.13.2").counts.failures, 3);
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
  EXPECT_EQ(board->store().Edge("4.13.1", "4.13.2").counts.clusters, 20);
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
  EXPECT_EQ(board->store().Edge("4.13.1", "4.13.2").counts.clusters, 0);
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

using Kind = ReportVerdict::Kind;

// Reports are untrusted: the board counts only those on an edge of its graph, in the
// report's channel and for its arch, whatever a policy engine before it checked.
TEST_F(BrakeBoardTest, AReportOnAnEdgeTheGraphDoesNotHaveIsRefusedAndLeavesNoTrace) {
  auto none = Open(false);
  EXPECT_FALSE(none->Submit({Attempt(1, true)}).ok()) << "no graph yet: nothing to check against";
  none->SetGraph(TestGraph());
  auto report = [&](int n, const char* from, const char* to, const char* channel = "stable-4.13", const char* arch = "amd64") {
    UpdateReport r = testing::TestReport(n, true, "a", Now(), "network", from, to);
    r.channel = channel;
    r.arch = arch;
    return r;
  };
  auto verdicts = none->Submit({report(1, "4.13.1", "4.99.0"), report(2, "4.13.2", "4.13.1"), report(3, "4.13.3", "4.13.4"),
                                report(4, "4.13.1", "4.13.2", "stable-4.13", "arm64"), report(5, "4.13.3", "4.13.4", "fast-4.13"),
                                report(6, "4.13.1", "4.13.2")});
  ASSERT_TRUE(verdicts.ok()) << verdicts.status().message();
  std::vector<Kind> kinds;
  for (const ReportVerdict& v : *verdicts) kinds.push_back(v.kind);
  EXPECT_EQ(kinds, (std::vector<Kind>{Kind::kRefused, Kind::kRefused, Kind::kRefused, Kind::kRefused, Kind::kRecorded, Kind::kRecorded}))
      << "no such release; a downgrade; an edge of another channel; another arch";
  EXPECT_EQ((*verdicts)[0].why, "4.13.1 -> 4.99.0 is not an update edge of channel stable-4.13 for amd64 in the graph builder's graph");
  EXPECT_EQ(none->store().reports(), 2) << "refused reports are not recorded";
  EXPECT_EQ(none->store().Edge("4.13.1", "4.99.0").counts.clusters, 0);
  EXPECT_NE(metrics_.Render().find("cincinnati_gb_reports_off_graph_total 4\n"), std::string::npos) << metrics_.Render();
}

// The brake's times are when reports arrived, never what a reporter wrote in them.
TEST_F(BrakeBoardTest, ABrakesFirstFailureIsWhenItsReportArrived) {
  auto board = Open();
  std::vector<UpdateReport> batch;
  for (int n = 1; n <= 20; ++n) {
    UpdateReport r = Attempt(n, n <= 4);
    r.started = 1;  // 1970-01-01T00:00:01Z, as a lying reporter writes
    r.ended = 1;
    batch.push_back(r);
  }
  clock_.Advance(90s);
  ASSERT_TRUE(board->Submit(batch).ok());
  ASSERT_EQ(board->List().size(), 1u);
  EXPECT_EQ(board->List()[0].first_failure, Now());
  EXPECT_NE(board->List()[0].message.find("First failure 2026-01-01T00:01:30Z."), std::string::npos) << board->List()[0].message;
  EXPECT_NE(metrics_.Render().find("cincinnati_gb_brake_delay_seconds_sum 0\n"), std::string::npos) << metrics_.Render();
}

// A cluster updates out of a version once: its reports count on the first edge out of it
// it reported, so one set of ids cannot weigh on every edge out of a version.
TEST_F(BrakeBoardTest, AClusterCountsOnOneEdgeOutOfAVersion) {
  auto board = Open();
  std::vector<UpdateReport> batch;
  for (int n = 1; n <= 20; ++n) batch.push_back(Attempt(n, false));
  ASSERT_TRUE(board->Submit(batch).ok());
  batch.clear();
  for (int n = 1; n <= 20; ++n) batch.push_back(testing::TestReport(n, true, "b", Now(), "network", "4.13.1", "4.13.3"));
  ASSERT_TRUE(board->Submit(batch).ok());
  EXPECT_EQ(board->store().Edge("4.13.1", "4.13.3").counts.clusters, 0);
  EXPECT_TRUE(board->InForce().empty());
}

// Per-edge state in memory follows the graph: counts of edges it no longer has (and that
// are not braked) are dropped, and read again from the file if the edge comes back.
TEST_F(BrakeBoardTest, EdgeCountsInMemoryAreThoseOfTheGraph) {
  auto board = Open();
  ASSERT_TRUE(board->Submit({Attempt(1, true), Attempt(2, false)}).ok());
  ASSERT_EQ(board->store().Edges().size(), 1u);
  board->SetGraph(TestGraph(false));  // 4.13.2 left the graph
  EXPECT_TRUE(board->store().Edges().empty());
  board->SetGraph(TestGraph());
  EXPECT_EQ(board->store().Edge("4.13.1", "4.13.2").counts.clusters, 2) << "read again from the file";
  EXPECT_EQ(board->store().Edge("4.13.1", "4.13.2").counts.failures, 1);
}

// A brake's file is for people to review and commit to graph-data: as written, whatever
// a person typed into a note, it passes graph-data's own check.
TEST_F(BrakeBoardTest, ABrakeFilePassesGraphDataCheckAsWrittenWhateverTheNote) {
  auto board = Open();
  std::vector<UpdateReport> batch;
  for (int n = 1; n <= 20; ++n) batch.push_back(Attempt(n, n <= 4));
  ASSERT_TRUE(board->Submit(batch).ok());
  ASSERT_EQ(board->InForce().size(), 1u);
  // The API refuses control characters; the board writes safely whatever reaches it.
  const std::string note = "line one\rmessage: injected\xc2\x85next: 1\xe2\x80\xa8x: y\tz \xff\x01 end";
  ASSERT_TRUE(board->Confirm("4.13.1", "4.13.2", "alice\rto: 9.9.9", note).ok());
  testing::TempDir graph_data;
  fs::copy(testing::Examples() / "ocp-4x" / "graph-data", graph_data.path(), fs::copy_options::recursive);
  fs::create_directories(graph_data / "blocked-edges");
  fs::copy_file(File(), graph_data / "blocked-edges" / fs::path(File()).filename());
  const Diagnostics found = graphdata::CheckGraphData(graph_data.path());
  std::string errors;
  for (const Diagnostic& d : found.items()) {
    if (d.severity == Diagnostic::Severity::kError) errors += d.location + ": " + d.message + "\n";
  }
  EXPECT_EQ(errors, "") << testing::ReadFile(File());
  const std::string written = testing::ReadFile(File());
  EXPECT_EQ(written.find('\r'), std::string::npos);
  EXPECT_NE(written.find("# Confirmed by alice to: 9.9.9: line one message: injected"), std::string::npos) << written;
}

// A brake cleared while the clock was ahead restarted the edge's count at that future
// date: once the clock is right, reports count again from now, not from then.
TEST_F(BrakeBoardTest, AClearMadeOnAClockThatWasAheadDoesNotSilenceTheEdge) {
  auto board = Open();
  const auto right = clock_.Now();
  clock_.SetNow(right + 24h * 365);
  std::vector<UpdateReport> batch;
  for (int n = 1; n <= 20; ++n) batch.push_back(Attempt(n, n <= 4));
  ASSERT_TRUE(board->Submit(batch).ok());
  ASSERT_TRUE(board->Clear("4.13.1", "4.13.2", "alice", "").ok());
  clock_.SetNow(right);
  board->SetGraph(TestGraph());  // the graph builder's next refresh
  clock_.Advance(1min);
  batch.clear();
  for (int n = 21; n <= 40; ++n) batch.push_back(Attempt(n, n <= 24));
  ASSERT_TRUE(board->Submit(batch).ok());
  EXPECT_EQ(board->InForce().size(), 1u) << "the new failures brake the edge again";
}

TEST_F(BrakeBoardTest, AnEdgeIntoAHotfixReleaseIsNeverCounted) {
  auto board = Open(false);
  auto graph = ReadGraphJson(R"({"nodes":[
    {"version":"4.12.3","payload":"r@sha256:1","metadata":{"io.openshift.upgrades.graph.release.channels":"stable-4.13",
      "io.openshift.upgrades.graph.release.arch":"amd64"}},
    {"version":"4.13.1-hotfix.1","payload":"r@sha256:2","metadata":{"io.openshift.upgrades.graph.release.channels":"stable-4.13",
      "io.openshift.upgrades.graph.release.arch":"amd64","io.openshift.upgrades.graph.hotfix.rules":"acme"}}],"edges":[[0,1]]})");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  board->SetGraph(std::make_shared<const ServedEdges>(std::make_shared<const Graph>(std::move(graph).value())));
  auto verdicts = board->Submit({testing::TestReport(1, true, "a", Now(), "network", "4.12.3", "4.13.1-hotfix.1")});
  ASSERT_TRUE(verdicts.ok());
  EXPECT_EQ((*verdicts)[0].kind, ReportVerdict::Kind::kRefused);
}

TEST_F(BrakeBoardTest, AUrlBaseThatIsNotHttpsIsRefusedAtStart) {
  for (const char* url : {"", "http://127.0.0.1:8081/api/upgrades_info/v1/brakes", "https://a b", "https://"}) {
    BrakeSettings settings;
    settings.url_base = url;
    auto board = BrakeBoard::Open(dir_.path().string(), settings, clock_, metrics_);
    ASSERT_FALSE(board.ok()) << url;
    EXPECT_NE(board.status().message().find("brakes.url_base"), std::string::npos) << board.status().message();
  }
  BrakeSettings off;
  off.enabled = false;
  EXPECT_TRUE(BrakeBoard::Open(dir_.path().string(), off, clock_, metrics_).ok()) << "no brakes, no files, no URL";
}

}  // namespace
}  // namespace cincinnati::reports
