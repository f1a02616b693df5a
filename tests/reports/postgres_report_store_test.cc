// Graph-builder replicas on one PostgreSQL (reports/postgres_report_store.h): reports
// spread over two boards count as one fleet's, a brake is decided once however the
// batches race, the other replica serves it after Follow, a clear on one is a clear on
// both, a replica opened later starts with the brakes in force, old reports are pruned,
// and graph generations agree across replicas. A real PostgreSQL server per test.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "env/clock.h"
#include "http_server/metrics.h"
#include "postgres_server.h"
#include "reports/brake_board.h"
#include "reports/postgres_report_store.h"
#include "reports/sqlite_report_store.h"
#include "reports/test_graph.h"
#include "signing/graph_generation.h"
#include "test_util.h"
#include "update_report_util.h"

namespace cincinnati::reports {
namespace {

using namespace std::chrono_literals;

class PostgresReportStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pg_.ready()) GTEST_SKIP() << pg_.error();
  }
  // One replica: its own metrics and files, the shared database.
  std::unique_ptr<BrakeBoard> Replica(int n) {
    auto store = PostgresReportStore::Open(pg_.url(), ReportLedger::Options{});
    EXPECT_TRUE(store.ok()) << store.status().message();
    if (!store.ok()) return nullptr;
    BrakeSettings settings;
    // The store's replication (one brake between replicas) on the Wilson rule's small
    // numbers; start_order_store_test.cc covers the sequential rule's state here.
    settings.kind = BrakeRuleKind::kWilson;
    settings.url_base = "https://updates.example.com/api/upgrades_info/v1/brakes";
    metrics_.push_back(std::make_unique<http_server::Registry>("cincinnati_gb_"));
    auto board = BrakeBoard::Open(std::move(store).value(), (dir_ / std::to_string(n)).string(), settings, clock_, *metrics_.back());
    EXPECT_TRUE(board.ok()) << board.status().message();
    if (!board.ok()) return nullptr;
    (*board)->SetGraph(TestGraph());
    return std::move(board).value();
  }
  int64_t Now() const { return env::UnixSeconds(clock_); }
  UpdateReport Attempt(int n, bool failed) { return testing::TestReport(n, failed, "a", Now(), n % 3 == 0 ? "etcd" : "network"); }
  int64_t Number(const std::string& sql) { return pg_.Number(sql); }
  int64_t Applied() { return Number("SELECT count(*) FROM brake_events WHERE action = 'applied'"); }

  testing::PostgresServer pg_;
  testing::TempDir dir_;
  env::ManualClock clock_;
  std::vector<std::unique_ptr<http_server::Registry>> metrics_;
};

TEST_F(PostgresReportStoreTest, ReportsSpreadOverTwoReplicasBrakeTheEdgeOnceAndBothServeIt) {
  auto a = Replica(1), b = Replica(2);
  ASSERT_TRUE(a && b);
  // 20 clusters, 3 failed: the rule is crossed only by the two halves together.
  for (int n = 1; n <= 20; ++n) {
    auto& board = n % 2 == 0 ? a : b;
    ASSERT_TRUE(board->Submit({Attempt(n, n > 17)}).ok());
  }
  EXPECT_EQ(Applied(), 1);
  ASSERT_EQ(a->InForce().size() + b->InForce().size(), 1u) << "decided by the replica that took the 20th report";
  EXPECT_TRUE(a->Follow() || b->Follow());
  ASSERT_EQ(a->InForce().size(), 1u);
  ASSERT_EQ(b->InForce().size(), 1u);
  EXPECT_EQ(a->InForce()[0], b->InForce()[0]) << "the same risk, the same served bytes";
  EXPECT_EQ(a->store().Edge("4.13.1", "4.13.2").counts.clusters, 20);
  EXPECT_EQ(a->store().Edge("4.13.1", "4.13.2").counts.failures, 3);
  // A resend to the other replica is a duplicate there too.
  auto again = a->Submit({Attempt(1, false)});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0].kind, ReportVerdict::Kind::kDuplicate);
  EXPECT_EQ(a->store().reports(), 20);
}

TEST_F(PostgresReportStoreTest, RacingReplicasDecideABrakeExactlyOnce) {
  for (int round = 0; round < 5; ++round) {
    ASSERT_TRUE(pg_.Exec("DROP TABLE IF EXISTS reports, edge_clusters, edge_counts, edge_components, edge_epochs, brakes, "
                         "brake_events").ok());
    std::vector<std::unique_ptr<BrakeBoard>> replicas;
    for (int r = 0; r < 4; ++r) replicas.push_back(Replica(10 * round + r));
    for (auto& board : replicas) ASSERT_TRUE(board);
    // Every replica takes a quarter of 80 clusters, 16 failed, all at once.
    std::atomic<int> failed_batches{0};
    std::vector<std::thread> threads;
    for (int r = 0; r < 4; ++r) {
      threads.emplace_back([&, r] {
        for (int n = 1 + r; n <= 80; n += 4) {
          if (!replicas[r]->Submit({Attempt(n, n % 5 == 0)}).ok()) ++failed_batches;
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failed_batches.load(), 0);
    EXPECT_EQ(Applied(), 1) << "round " << round;
    // The totals a decision reads are those of the clusters counted.
    EXPECT_EQ(Number("SELECT clusters FROM edge_counts"), Number("SELECT count(*) FROM edge_clusters"));
    EXPECT_EQ(Number("SELECT failures FROM edge_counts"), Number("SELECT count(*) FROM edge_clusters WHERE failed <> 0"));
    EXPECT_EQ(Number("SELECT sum(failures) FROM edge_components"), 16);
    for (auto& board : replicas) {
      board->Follow();
      EXPECT_EQ(board->InForce().size(), 1u);
    }
  }
}

TEST_F(PostgresReportStoreTest, AClearOnOneReplicaIsAClearOnAllAndALateReplicaStartsWithTheBrakes) {
  auto a = Replica(1), b = Replica(2);
  ASSERT_TRUE(a && b);
  std::vector<UpdateReport> batch;
  for (int n = 1; n <= 20; ++n) batch.push_back(Attempt(n, n <= 5));
  ASSERT_TRUE(a->Submit(batch).ok());
  ASSERT_EQ(a->InForce().size(), 1u);
  auto late = Replica(3);  // a restarted replica: the brake before its first graph is served
  ASSERT_TRUE(late);
  EXPECT_EQ(late->InForce().size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(late->file_path("4.13.1", "4.13.2")));
  ASSERT_TRUE(b->Follow());
  clock_.Advance(1h);
  ASSERT_TRUE(b->Clear("4.13.1", "4.13.2", "ops@example.com", "a bad site, not the edge").ok());
  EXPECT_TRUE(b->InForce().empty());
  EXPECT_TRUE(a->Follow());
  EXPECT_TRUE(late->Follow());
  EXPECT_TRUE(a->InForce().empty());
  EXPECT_FALSE(std::filesystem::exists(late->file_path("4.13.1", "4.13.2"))) << "the cleared brake's file goes on every replica";
  EXPECT_FALSE(a->Clear("4.13.1", "4.13.2", "ops@example.com", "").ok()) << "nothing in force to clear";
  EXPECT_EQ(a->store().Edge("4.13.1", "4.13.2").counts.clusters, 0) << "the count starts afresh";
  // Old evidence does not brake the edge again; new attempts do.
  ASSERT_TRUE(a->Submit(batch).ok());
  EXPECT_TRUE(a->InForce().empty());
  clock_.Advance(1min);
  batch.clear();
  for (int n = 21; n <= 40; ++n) batch.push_back(Attempt(n, n <= 25));
  ASSERT_TRUE(b->Submit(batch).ok());
  EXPECT_EQ(b->InForce().size(), 1u);
  EXPECT_EQ(Applied(), 2);
}

TEST_F(PostgresReportStoreTest, ADatabaseThatIsDownRefusesBatchesAndKeepsTheBrakesServed) {
  auto a = Replica(1);
  ASSERT_TRUE(a);
  std::vector<UpdateReport> batch;
  for (int n = 1; n <= 20; ++n) batch.push_back(Attempt(n, n <= 5));
  ASSERT_TRUE(a->Submit(batch).ok());
  ASSERT_EQ(a->InForce().size(), 1u);
  pg_.Stop();
  EXPECT_FALSE(a->Submit({Attempt(30, true)}).ok()) << "an error: the agent is answered 503 and sends it again";
  EXPECT_FALSE(a->Follow());
  EXPECT_EQ(a->InForce().size(), 1u) << "the brakes read last stay in force";
}

TEST_F(PostgresReportStoreTest, ReportsPastTheRetentionArePrunedInBothStores) {
  auto a = Replica(1);
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->Submit({Attempt(1, false), Attempt(2, true)}).ok());
  clock_.Advance(24h * 10);
  ASSERT_TRUE(a->Submit({Attempt(3, false)}).ok());
  auto gone = a->Prune(7 * 86400);
  ASSERT_TRUE(gone.ok()) << gone.status().message();
  EXPECT_EQ(*gone, 2);
  EXPECT_EQ(a->store().reports(), 1);
  EXPECT_EQ(a->store().Edge("4.13.1", "4.13.2").counts.clusters, 3) << "counts stay";

  auto local = SqliteReportStore::Open((dir_ / "reports.db").string(), ReportLedger::Options{});
  ASSERT_TRUE(local.ok());
  auto decide = [](const EdgeState&) { return std::optional<BrakeRecord>(); };
  ASSERT_TRUE((*local)->Record({testing::TestReport(1, false, "a", 1000)}, 1000, decide).ok());
  ASSERT_TRUE((*local)->Record({testing::TestReport(2, false, "a", 5000)}, 5000, decide).ok());
  auto pruned = (*local)->Prune(2000);
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(*pruned, 1);
  EXPECT_EQ((*local)->reports(), 1);
}

TEST_F(PostgresReportStoreTest, ReplicasNumberTheSameGraphAlikeAndARestartNeverGoesBack) {
  auto clock = env::ManualClock::AtUnixSeconds(1'900'000'000);
  auto a = server::GraphGeneration::Shared(pg_.url(), *clock);
  auto b = server::GraphGeneration::Shared(pg_.url(), *clock);
  ASSERT_TRUE(a.ok() && b.ok());
  const uint64_t first = (*a)->For("hash-1");
  EXPECT_EQ((*b)->For("hash-1"), first) << "the same bytes, the same number, whichever replica";
  clock->Advance(1s);
  const uint64_t second = (*b)->For("hash-2");
  EXPECT_GT(second, first);
  EXPECT_EQ((*a)->For("hash-2"), second);
  // A replica restarted with its clock set back (by less than a checker's allowed lead:
  // signing/graph_generation.h) still continues from the shared row.
  auto behind = env::ManualClock::AtUnixSeconds(1'900'000'000 - 100);
  auto restarted = server::GraphGeneration::Shared(pg_.url(), *behind);
  ASSERT_TRUE(restarted.ok());
  EXPECT_GT((*restarted)->For("hash-3"), second);
}

// A replica that never read the brake (it has not followed yet) confirms it: only the
// state and who changed, the decision's message and counts stay as decided.
TEST_F(PostgresReportStoreTest, AConfirmThroughAReplicaThatHasNotFollowedKeepsTheDecision) {
  auto a = Replica(1), b = Replica(2);
  ASSERT_TRUE(a && b);
  std::vector<UpdateReport> batch;
  for (int n = 1; n <= 20; ++n) batch.push_back(Attempt(n, n <= 5));
  ASSERT_TRUE(a->Submit(batch).ok());
  ASSERT_EQ(a->List().size(), 1u);
  ASSERT_TRUE(b->List().empty());
  ASSERT_TRUE(b->Confirm("4.13.1", "4.13.2", "ops@example.com", "seen it").ok());
  ASSERT_EQ(b->List().size(), 1u);
  const BrakeRecord decided = a->List()[0], confirmed = b->List()[0];
  EXPECT_EQ(confirmed.state, BrakeState::kConfirmed);
  EXPECT_EQ(confirmed.message, decided.message);
  EXPECT_EQ(confirmed.counts.clusters, 20);
  EXPECT_EQ(confirmed.since, decided.since);
  ASSERT_TRUE(a->Follow());
  EXPECT_EQ(a->List()[0].state, BrakeState::kConfirmed);
  EXPECT_EQ(a->List()[0].message, decided.message);
}

// The database's clock is the replicas' second opinion: one whose clock is an hour
// behind does not take the shared number back as "ahead of its clock".
TEST_F(PostgresReportStoreTest, AReplicaWhoseClockIsBehindNumbersPastTheSharedRow) {
  const int64_t now = env::UnixSeconds(*env::SharedRealClock());
  auto right = env::ManualClock::AtUnixSeconds(now), behind = env::ManualClock::AtUnixSeconds(now - 3600);
  auto a = server::GraphGeneration::Shared(pg_.url(), *right);
  auto b = server::GraphGeneration::Shared(pg_.url(), *behind);
  ASSERT_TRUE(a.ok() && b.ok());
  const uint64_t first = (*a)->For("hash-1");
  EXPECT_GT((*b)->For("hash-2"), first);
  EXPECT_EQ((*b)->given_up(), 0u);
  EXPECT_GT((*a)->For("hash-3"), first);
}

}  // namespace
}  // namespace cincinnati::reports
