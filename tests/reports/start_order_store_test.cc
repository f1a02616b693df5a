// The sequential rule's state in both report stores (report_ledger.h): attempts in
// start order, their settler rebuilt from the store when an edge is loaded, stuck
// attempts counted as failures past the horizon, known-bad sites kept apart, and an
// existing file without the new tables opened as it is; the PostgreSQL store's decision,
// reading only unsettled attempts, equals the full replay. The SQLite ledger on a real
// file; the PostgreSQL store on a real server per test.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <tuple>

#include <fmt/format.h>

#include "postgres_server.h"
#include "reports/postgres_report_store.h"
#include "reports/sqlite_report_store.h"
#include "sqlite/database.h"
#include "test_util.h"
#include "update_report_util.h"

namespace cincinnati::reports {
namespace {

constexpr int64_t kT = 1767500000;

UpdateReport Start(int cluster, int64_t at, const std::string& attempt = "a1") {
  UpdateReport r = testing::TestReport(cluster, false, attempt, at, "", "4.13.1", "4.13.2");
  r.result = UpdateResult::kStarted;
  r.ended = 0;
  return r;
}

UpdateReport End(int cluster, int64_t started, bool failed, int64_t at, const std::string& attempt = "a1",
                 const std::string& from = "4.13.1", const std::string& to = "4.13.2") {
  UpdateReport r = testing::TestReport(cluster, failed, attempt, started, "network", from, to);
  r.ended = at;
  return r;
}

std::optional<BrakeRecord> Never(const EdgeState&) { return std::nullopt; }

using OpenStore = std::function<std::unique_ptr<ReportStore>()>;

void Record(ReportStore& store, const std::vector<UpdateReport>& batch, int64_t received) {
  auto recorded = store.Record(batch, received, Never);
  ASSERT_TRUE(recorded.ok()) << recorded.status().message();
}

SequentialCounts Lag0(ReportStore& store) {
  const EdgeState edge = store.Edge("4.13.1", "4.13.2");
  EXPECT_EQ(edge.prefixes.size(), LedgerStartOrder().lags_secs.size());
  return edge.prefixes.empty() ? SequentialCounts{} : edge.prefixes.front();
}

// Ten clusters start a second apart; three fail, five complete, two never end.
void StartOrderSurvivesAReopenAndStuckAttemptsFail(const OpenStore& open) {
  {
    auto store = open();
    ASSERT_TRUE(store);
    for (int c = 1; c <= 10; ++c) Record(*store, {Start(c, kT + c)}, kT + c);
    std::vector<UpdateReport> ends;
    for (int c = 1; c <= 8; ++c) ends.push_back(End(c, kT + c, c <= 3, kT + 600));
    Record(*store, ends, kT + 600);
    const SequentialCounts now = Lag0(*store);
    EXPECT_EQ(now.clusters, 10);  // the open ones as successes for now
    EXPECT_EQ(now.failures, 3);
    EXPECT_EQ(store->Edge("4.13.1", "4.13.2").prefixes.back().clusters, 0) << "none started 90 minutes ago";
  }
  auto store = open();  // rebuilt from the store
  // The first tick after a reopen finds the edge with recent attempts, no report needed.
  auto recent = store->Tick(kT + 600);
  ASSERT_TRUE(recent.ok()) << recent.status().message();
  EXPECT_EQ(*recent, (std::vector<EdgeKey>{{"4.13.1", "4.13.2"}}));
  const SequentialCounts again = Lag0(*store);
  EXPECT_EQ(again.clusters, 10);
  EXPECT_EQ(again.failures, 3);
  // Past the horizon, without a report: the two that never ended are stuck, failures.
  ASSERT_TRUE(store->Tick(kT + kStartHorizon + 11).ok());
  const EdgeState settled = store->Edge("4.13.1", "4.13.2");
  ASSERT_FALSE(settled.prefixes.empty());
  EXPECT_EQ(settled.prefixes.front().clusters, 10);
  EXPECT_EQ(settled.prefixes.front().failures, 5);
  EXPECT_EQ(settled.prefixes.back().failures, 5) << "every prefix holds the final ones";
  EXPECT_EQ(settled.recent_attempts, 0);
  EXPECT_EQ(settled.counts.clusters, 8) << "the Wilson counts are the final reports'";
  EXPECT_EQ(settled.counts.failures, 3);
}

// A cluster whose previous update failed elsewhere is a known-bad site: its attempt
// here is not counted against the edge, and is the baseline.
void AKnownBadSiteIsKeptApart(const OpenStore& open) {
  auto store = open();
  ASSERT_TRUE(store);
  Record(*store, {End(1, kT, true, kT + 100, "a0", "4.12.9", "4.13.1"), End(2, kT, false, kT + 100, "a0", "4.12.9", "4.13.1")},
         kT + 100);
  Record(*store, {Start(1, kT + 200), Start(2, kT + 200)}, kT + 200);
  Record(*store, {End(1, kT + 200, true, kT + 900), End(2, kT + 200, false, kT + 900)}, kT + 900);
  const SequentialCounts counts = Lag0(*store);
  EXPECT_EQ(counts.clusters, 1);
  EXPECT_EQ(counts.failures, 0);
  EXPECT_EQ(counts.excluded, 1);
  EXPECT_EQ(counts.excluded_failures, 1);
}

class SqliteStartOrderTest : public ::testing::Test {
 protected:
  OpenStore Opener() {
    return [this]() -> std::unique_ptr<ReportStore> {
      auto store = SqliteReportStore::Open((dir_ / "reports.db").string(), ReportLedger::Options{});
      EXPECT_TRUE(store.ok()) << store.status().message();
      return store.ok() ? std::move(store).value() : nullptr;
    };
  }
  testing::TempDir dir_;
};

TEST_F(SqliteStartOrderTest, StartOrderSurvivesAReopenAndStuckAttemptsFail) { StartOrderSurvivesAReopenAndStuckAttemptsFail(Opener()); }
TEST_F(SqliteStartOrderTest, AKnownBadSiteIsKeptApart) { AKnownBadSiteIsKeptApart(Opener()); }

TEST_F(SqliteStartOrderTest, AFileOfTheSchemaBeforeOpensAndCountsOn) {
  {
    auto store = Opener()();
    ASSERT_TRUE(store);
    Record(*store, {End(1, kT, true, kT + 100), End(2, kT, false, kT + 100)}, kT + 100);
  }
  {  // as a file written before starts were kept
    auto db = sqlite::Database::Open((dir_ / "reports.db").string(), "test", sqlite::Database::Options{});
    ASSERT_TRUE(db.ok());
    for (const char* table : {"attempt_starts", "edge_attempts", "cluster_outcomes"}) {
      ASSERT_TRUE((*db)->Exec(std::string("DROP TABLE ") + table).ok()) << table;
    }
  }
  auto store = Opener()();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->Edge("4.13.1", "4.13.2").counts.clusters, 2) << "the counts stay";
  Record(*store, {Start(3, kT + 200)}, kT + 200);
  Record(*store, {End(3, kT + 200, true, kT + 300)}, kT + 300);
  const EdgeState edge = store->Edge("4.13.1", "4.13.2");
  EXPECT_EQ(edge.counts.clusters, 3);
  ASSERT_FALSE(edge.prefixes.empty());
  EXPECT_EQ(edge.prefixes.front().clusters, 1) << "attempts from the new tables on";
  EXPECT_EQ(edge.prefixes.front().failures, 1);
}

class PostgresStartOrderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pg_.ready()) GTEST_SKIP() << pg_.error();
  }
  OpenStore Opener() {
    return [this]() -> std::unique_ptr<ReportStore> {
      auto store = PostgresReportStore::Open(pg_.url(), ReportLedger::Options{});
      EXPECT_TRUE(store.ok()) << store.status().message();
      return store.ok() ? std::move(store).value() : nullptr;
    };
  }
  testing::PostgresServer pg_;
};

TEST_F(PostgresStartOrderTest, StartOrderSurvivesAReopenAndStuckAttemptsFail) { StartOrderSurvivesAReopenAndStuckAttemptsFail(Opener()); }
TEST_F(PostgresStartOrderTest, AKnownBadSiteIsKeptApart) { AKnownBadSiteIsKeptApart(Opener()); }

// A rollout of 400 clusters on 4.13.1 -> 4.13.2, 30 s apart (longer than the horizon):
// most announce and end within it, some never end (stuck), some end after the horizon
// (late), some send only their final report (in time or late), some a Started report
// after their final one; clusters 1..30 updated 4.12.9 -> 4.13.1 before, every third
// failing there (known-bad sites here).
std::vector<std::pair<int64_t, UpdateReport>> Rollout() {
  std::mt19937 rng(7);
  std::vector<std::pair<int64_t, UpdateReport>> events;
  for (int c = 1; c <= 30; ++c) events.emplace_back(kT + c, End(c, kT, c % 3 == 0, kT + c, "a0", "4.12.9", "4.13.1"));
  for (int c = 1; c <= 400; ++c) {
    const int64_t s = kT + 1000 + c * 30, d = 300 + static_cast<int64_t>(rng() % 5000);
    const bool failed = rng() % 6 == 0;
    const unsigned kind = rng() % 20;
    if (kind < 17) events.emplace_back(s, Start(c, s));
    if (kind < 12 || kind == 17) events.emplace_back(s + d, End(c, s, failed, s + d));  // in time
    if (kind == 14 || kind == 15 || kind == 18) {
      events.emplace_back(s + kStartHorizon + d, End(c, s, failed, s + kStartHorizon + d));  // late
    }
    if (kind == 19) {  // a start after its end counts for nothing
      events.emplace_back(s + d, End(c, s, failed, s + d));
      events.emplace_back(s + d + 10, Start(c, s));
    }
    // kind 12, 13 and 16: stuck.
  }
  std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return events;
}

using Counts = std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>;
Counts Tuples(const std::vector<SequentialCounts>& prefixes) {
  Counts out;
  for (const SequentialCounts& c : prefixes) out.emplace_back(c.clusters, c.failures, c.excluded, c.excluded_failures);
  return out;
}

// The PostgreSQL store settles an edge reading only the attempts that can still change
// (postgres_attempts.h): at every look of the rollout, and past its horizon, its counts
// equal the full replay of every attempt of the edge (ReplayAttempts over edge_attempts)
// and the SQLite ledger's fed the same reports, and no settled attempt is left unread
// nor an unsettled one folded.
TEST_F(PostgresStartOrderTest, ADecisionReadingOnlyUnsettledAttemptsEqualsTheFullReplay) {
  auto pg_store = Opener()();
  ASSERT_TRUE(pg_store);
  testing::TempDir dir;
  auto sqlite = SqliteReportStore::Open((dir / "reports.db").string(), ReportLedger::Options{});
  ASSERT_TRUE(sqlite.ok()) << sqlite.status().message();
  int64_t now = 0, next_look = kT + 900;
  int looks = 0, stuck_seen = 0, excluded_seen = 0, folded_early = 0;
  auto look = [&](int64_t at) {
    now = std::max(now, at);
    ASSERT_TRUE(pg_store->Tick(now).ok());
    ASSERT_TRUE((*sqlite)->Tick(now).ok());
    const EdgeState got = pg_store->Edge("4.13.1", "4.13.2");
    auto rows = pg_.Exec("SELECT cluster, started, announced, failed, resolved, known_bad FROM edge_attempts WHERE "
                         "from_version = '4.13.1' AND to_version = '4.13.2'");
    ASSERT_TRUE(rows.ok()) << rows.status().message();
    std::vector<AttemptRow> attempts;
    int64_t replay_at = now;
    for (const auto& r : rows->rows) {
      attempts.push_back({r[0], std::stoll(r[1]), std::stoll(r[2]), std::stoll(r[3]), std::stoll(r[4]), r[5] != "0"});
      replay_at = std::max({replay_at, attempts.back().announced, attempts.back().resolved});
      stuck_seen += attempts.back().failed < 0 && attempts.back().started + kStartHorizon <= now;
    }
    const auto replay = ReplayAttempts(attempts);
    const Counts full = Tuples(replay->Settle(replay_at));
    EXPECT_EQ(Tuples(got.prefixes), full) << "at " << now - kT;
    EXPECT_EQ(got.recent_attempts, replay->recent()) << "at " << now - kT;
    if (!attempts.empty()) {
      EXPECT_EQ(Tuples((*sqlite)->Edge("4.13.1", "4.13.2").prefixes), full) << "at " << now - kT;
    }
    EXPECT_EQ(pg_.Number(fmt::format("SELECT count(*) FROM edge_attempts WHERE to_version = '4.13.2' AND settled = 0 AND (started + {} <= {} OR "
                                     "(known_bad <> 0 AND resolved > 0))", kStartHorizon, now)),
              0) << "settled attempts left to read at " << now - kT;
    folded_early += pg_.Number(fmt::format("SELECT count(*) FROM edge_attempts WHERE to_version = '4.13.2' AND settled = 1 AND started + {} > {} AND "
                                             "known_bad = 0", kStartHorizon, now));
    if (!full.empty()) excluded_seen = std::max<int>(excluded_seen, static_cast<int>(std::get<2>(full.front())));
    ++looks;
  };
  for (const auto& [at, report] : Rollout()) {
    for (; next_look <= at; next_look += 900) ASSERT_NO_FATAL_FAILURE(look(next_look));
    Record(*pg_store, {report}, at);
    Record(**sqlite, {report}, at);
  }
  ASSERT_NO_FATAL_FAILURE(look(now + kStartHorizon + 1));
  EXPECT_EQ(folded_early, 0) << "no attempt within the horizon folded";
  EXPECT_GT(looks, 20);
  EXPECT_GT(stuck_seen, 0) << "the rollout has stuck attempts";
  EXPECT_GT(excluded_seen, 0) << "... and known-bad sites";
  EXPECT_EQ(pg_.Number("SELECT count(*) FROM edge_attempts WHERE to_version = '4.13.2' AND settled = 0"), 0) << "everything settled at the end";
}

}  // namespace
}  // namespace cincinnati::reports
