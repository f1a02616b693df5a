// GraphGeneration (signing/graph_generation.h): numbers that only grow, never run ahead of
// the clock by more than a checker allows, and recover from a clock that was ahead
// without anyone deleting the state file.
#include "signing/graph_generation.h"

#include <gtest/gtest.h>

#include <chrono>

#include "core/answer_signature.h"
#include "env/clock.h"
#include "test_util.h"

namespace cincinnati::server {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kLeadMs = kMaxGenerationLead * 1000;
const env::Clock::SystemTime kStart{std::chrono::seconds(1767225600)};  // 2026-01-01

uint64_t Ms(env::Clock::SystemTime t) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count());
}

class GraphGenerationTest : public ::testing::Test {
 protected:
  std::unique_ptr<GraphGeneration> Open() {
    auto g = GraphGeneration::Open((dir_ / "generation").string(), clock_);
    EXPECT_TRUE(g.ok()) << g.status().message();
    return g.ok() ? std::move(g).value() : nullptr;
  }
  testing::TempDir dir_;
  env::ManualClock clock_{kStart};
};

TEST_F(GraphGenerationTest, TheSameBytesKeepTheirNumberAndNewOnesGrowAcrossARestartAndASmallStepBack) {
  auto g = Open();
  const uint64_t first = g->For("a");
  EXPECT_EQ(first, Ms(kStart));
  EXPECT_EQ(g->For("a"), first);
  clock_.Advance(10s);
  EXPECT_EQ(g->For("a"), first) << "the same bytes later";
  const uint64_t second = g->For("b");
  EXPECT_EQ(second, Ms(kStart + 10s));
  // NTP steps the clock back two minutes (less than a checker's lead): still growing.
  clock_.SetNow(kStart - 110s);
  g = Open();
  EXPECT_EQ(g->For("b"), second) << "restarted on the same graph";
  EXPECT_EQ(g->For("c"), second + 1);
  EXPECT_EQ(g->given_up(), 0u);
  EXPECT_GT(g->SecondsAhead(), 0);
  EXPECT_LE(g->SecondsAhead(), static_cast<double>(kMaxGenerationLead));
}

TEST_F(GraphGenerationTest, ANumberFromAClockThatWasAheadIsGivenUpAndPassedOnceTheClockCatchesUp) {
  // A year ahead: a VM restored with a bad clock. The number is kept durably.
  const auto ahead = kStart + std::chrono::hours(24 * 365);
  clock_.SetNow(ahead);
  const uint64_t future = Open()->For("a");
  EXPECT_EQ(future, Ms(ahead));

  // The clock is corrected; the service starts again with the same state.
  clock_.SetNow(kStart);
  auto g = Open();
  const uint64_t renumbered = g->For("a");
  EXPECT_EQ(renumbered, Ms(kStart) + kLeadMs)
      << "no lower than any number a checker with a right clock could have taken, and one it takes";
  EXPECT_EQ(g->given_up(), 1u);
  EXPECT_DOUBLE_EQ(g->SecondsAhead(), static_cast<double>(kMaxGenerationLead));
  // What a checking agent with a right clock makes of it: the number is within its lead.
  EXPECT_LE(renumbered / 1000, Ms(kStart) / 1000 + kMaxGenerationLead);
  clock_.Advance(1h);
  EXPECT_EQ(g->For("a"), renumbered) << "the same graph keeps its number";
  EXPECT_EQ(g->given_up(), 1u) << "given up once";

  // A restart meanwhile keeps the given-up number in the file.
  g = Open();
  EXPECT_EQ(g->For("a"), renumbered);
  // Once the clock passes the given-up number, the graph is numbered past it: an agent
  // whose clock was ahead too and took it takes answers again.
  clock_.SetNow(ahead + 1s);
  const uint64_t past = g->For("a");
  EXPECT_GT(past, future);
  EXPECT_EQ(past, Ms(ahead + 1s));
  clock_.Advance(1s);
  EXPECT_EQ(g->For("a"), past) << "and only once";
  EXPECT_EQ(Open()->For("a"), past);
}

TEST_F(GraphGenerationTest, AClockSteppedBackWhileRunningIsNoticedAtTheNextCall) {
  auto g = GraphGeneration::InMemory(clock_);
  clock_.SetNow(kStart + 48h);
  const uint64_t future = g->For("a");
  clock_.SetNow(kStart);
  EXPECT_EQ(g->For("a"), Ms(kStart) + kLeadMs);
  EXPECT_LT(Ms(kStart) + kLeadMs, future);
  EXPECT_EQ(g->given_up(), 1u);
}

TEST_F(GraphGenerationTest, AFileThatDoesNotParseStopsTheStartAndAnOlderOneIsRead) {
  testing::WriteFile(dir_ / "generation", "12x abc\n");
  EXPECT_FALSE(GraphGeneration::Open((dir_ / "generation").string(), clock_).ok());
  testing::WriteFile(dir_ / "generation", "1767225600000 abc\n");  // written before numbers were given up
  auto g = Open();
  EXPECT_EQ(g->For("abc"), 1767225600000u);
}

}  // namespace
}  // namespace cincinnati::server
