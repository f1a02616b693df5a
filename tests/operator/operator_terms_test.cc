// Leadership terms on a real PostgreSQL server: a term ended cleanly (Release after the
// operator's settle check said yes) costs its successor no grace, and only the holder of
// the term's epoch can record that; a standby knows who leads from the moment it is
// opened; a renewal to a database that stopped answering fails within the lease. And
// the term-end action of the replica's role runs when the term lapses or ends.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <iostream>

#include "operator/leadership.h"
#include "operator/postgres_state.h"
#include "postgres_server.h"
#include "service_util.h"

namespace cincinnati::upgrade {
namespace {

using namespace std::chrono_literals;

bool Or(const Result<bool>& r, bool otherwise) { return r.ok() ? *r : otherwise; }

class LeadershipTermTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(pg_.ready()) << pg_.log(); }
  PostgresState Open(const std::string& holder, std::chrono::seconds lease = 10s) {
    auto state = OpenPostgresState(pg_.url(), holder, lease);
    EXPECT_TRUE(state.ok()) << state.status().message();
    return state.ok() ? std::move(*state) : PostgresState{};
  }
  int64_t EndedCleanly() { return pg_.Number("SELECT ended_cleanly::int FROM leader WHERE id = 1"); }
  testing::PostgresServer pg_;
};

// A term whose settle check says yes is recorded as ended cleanly: the next leader has no
// grace to wait out. One whose check says no (or that has none) is not: the next leader
// waits out the lease and the longest call, as after a kill -9.
TEST_F(LeadershipTermTest, OnlyATermThatSettledSparesItsSuccessorTheGrace) {
  PostgresState a = Open("replica-a");
  PostgresState b = Open("replica-b");
  ASSERT_TRUE(a.leadership && b.leadership);
  ASSERT_TRUE(Or(a.leadership->TryAcquire(), false));
  int asked = 0;
  a.leadership->SetTermSettled([&] {
    ++asked;
    return true;
  });
  a.leadership->Release();
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(EndedCleanly(), 1);
  ASSERT_TRUE(Or(b.leadership->TryAcquire(), false));
  EXPECT_EQ(b.leadership->PredecessorGrace(10s), 0ms);
  EXPECT_EQ(EndedCleanly(), 0);  // the new term has not ended

  // b's term: its check says no (a call still runs).
  b.leadership->SetTermSettled([] { return false; });
  b.leadership->Release();
  EXPECT_EQ(EndedCleanly(), 0);
  ASSERT_TRUE(Or(a.leadership->TryAcquire(), false));
  EXPECT_GT(a.leadership->PredecessorGrace(10s), 10s);  // the lease less the margin, plus the call

  // a's new term has no check of its own (the last term's was dropped): not clean.
  a.leadership->Release();
  EXPECT_EQ(EndedCleanly(), 0);
  ASSERT_TRUE(Or(b.leadership->TryAcquire(), false));
  EXPECT_GT(b.leadership->PredecessorGrace(10s), 10s);
}

// A leader whose lock session was ended behind its back holds no epoch any more: its
// Release records nothing, even with a check that says yes, and the next leader waits.
TEST_F(LeadershipTermTest, AFormerHolderCannotMarkATermEnded) {
  PostgresState a = Open("replica-a");
  PostgresState b = Open("replica-b");
  ASSERT_TRUE(Or(a.leadership->TryAcquire(), false));
  a.leadership->SetTermSettled([] { return true; });
  ASSERT_TRUE(pg_.Exec("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted").ok());
  ASSERT_TRUE(testing::WaitFor([&] { return Or(b.leadership->TryAcquire(), false); }, 60s));
  a.leadership->Release();  // it has not noticed: its epoch is the old one
  EXPECT_EQ(EndedCleanly(), 0);
  EXPECT_EQ(pg_.Number("SELECT epoch FROM leader WHERE id = 1"), 2);
}

// A standby names the leader as soon as it is opened, before any election round.
TEST_F(LeadershipTermTest, AStandbyKnowsTheLeaderFromTheStart) {
  PostgresState a = Open("replica-a");
  ASSERT_TRUE(Or(a.leadership->TryAcquire(), false));
  PostgresState b = Open("replica-b");
  EXPECT_EQ(b.leadership->Leader(), "replica-a");
  // After a clean end nobody leads: the ended leader is not named.
  a.leadership->SetTermSettled([] { return true; });
  a.leadership->Release();
  PostgresState c = Open("replica-c");
  EXPECT_EQ(c.leadership->Leader(), "");
}

// The database stops answering (SIGSTOP, over a Unix socket): the leader's renewal
// fails within its lease (the lock session's client-side deadline), not never.
TEST_F(LeadershipTermTest, ARenewalToAStoppedDatabaseFailsWithinTheLease) {
  PostgresState a = Open("replica-a", 4s);
  ASSERT_TRUE(Or(a.leadership->TryAcquire(), false));
  ASSERT_TRUE(a.leadership->Renew().ok());
  ASSERT_GT(pg_.Freeze(), 1);
  const auto start = std::chrono::steady_clock::now();
  Status renewed = a.leadership->Renew();
  const auto took = std::chrono::steady_clock::now() - start;
  std::cerr << "a renewal to a stopped database failed after " << std::chrono::duration<double>(took).count() << " s: "
            << renewed.message() << "\n";
  EXPECT_FALSE(renewed.ok());
  EXPECT_LT(took, 4s + 2s);  // the lease, and a margin for a loaded machine
  ASSERT_GT(pg_.Thaw(), 1);
  // It gave the leadership up: a standby takes it once the server sees the session gone.
  PostgresState b = Open("replica-b", 4s);
  ASSERT_TRUE(testing::WaitFor([&] { return Or(b.leadership->TryAcquire(), false); }, 60s));
}

// The term-end action runs once when the lease lapses (the time read moves the role)
// and once when the replica steps down, never while it stands by.
TEST(ReplicaRoleTermTest, TheTermEndActionRunsOnLapseAndOnStepDown) {
  ReplicaRoleState role;
  int ended = 0;
  role.OnTermEnd([&] { ++ended; });
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  EXPECT_FALSE(role.StepDown());
  EXPECT_EQ(ended, 0);
  role.TookOver(t0, t0, 4s);
  EXPECT_EQ(role.At(t0 + 1s), ReplicaRole::kActing);
  EXPECT_EQ(ended, 0);
  EXPECT_EQ(role.At(t0 + 2s), ReplicaRole::kLapsed);  // the lease less its margin
  EXPECT_EQ(role.At(t0 + 3s), ReplicaRole::kLapsed);
  EXPECT_EQ(ended, 1);
  role.Renewed(t0 + 3s);
  EXPECT_EQ(role.At(t0 + 3s), ReplicaRole::kActing);
  EXPECT_TRUE(role.StepDown());
  EXPECT_EQ(ended, 2);
}

}  // namespace
}  // namespace cincinnati::upgrade
