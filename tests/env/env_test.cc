// The environment layer: checked and durable writes, capped reads that refuse what is
// not a regular file, the state directory lock; and the API access checks (kube/).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "env/clock.h"
#include "env/scaled_clock.h"
#include "env/file_system.h"
#include "full_disk.h"
#include "kube/api_access.h"
#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

TEST(FileSystemTest, AFullDiskIsNoSpaceAndLeavesTheOldContent) {
  TempDir dir;
  const fs::path path = dir / "state.json";
  ASSERT_TRUE(env::WriteFileDurably(path, "old").ok());
  testing::FullDiskFileSystem full(10);
  Status s = env::WriteFileDurably(path, std::string(100, 'x'), full);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kNoSpace) << s.message();
  EXPECT_NE(s.message().find("No space left on device"), std::string::npos) << s.message();
  EXPECT_EQ(testing::ReadFile(path), "old");
  for (const auto& e : fs::directory_iterator(dir.path())) {  // no temporary file left behind
    EXPECT_EQ(e.path().filename(), "state.json");
  }
  full.SetBudget(1000);
  ASSERT_TRUE(env::WriteFileDurably(path, "new", full).ok());
  EXPECT_EQ(testing::ReadFile(path), "new");
}

TEST(FileSystemTest, WriteNewFileChecksEveryWrite) {
  TempDir dir;
  testing::FullDiskFileSystem full(3);
  Status s = env::WriteNewFile(dir / "a", "abcdef", full);
  EXPECT_EQ(s.code(), Status::Code::kNoSpace);
  EXPECT_EQ(full.refused(), 1u);
}

TEST(FileSystemTest, ReadFileReadsOnlyRegularFilesUpToTheLimit) {
  TempDir dir;
  testing::WriteFile(dir / "small", "hello");
  auto small = env::ReadFile(dir / "small", 5);
  ASSERT_TRUE(small.ok()) << small.status().message();
  EXPECT_EQ(*small, "hello");

  auto large = env::ReadFile(dir / "small", 4);
  ASSERT_FALSE(large.ok());
  EXPECT_EQ(large.status().code(), Status::Code::kTooLarge);
  EXPECT_NE(large.status().message().find("over the limit of 4 bytes"), std::string::npos) << large.status().message();

  EXPECT_EQ(env::ReadFile(dir / "missing", 10).status().code(), Status::Code::kNotFound);

  fs::create_directory(dir / "dir.yaml");
  auto directory = env::ReadFile(dir / "dir.yaml", 10);
  EXPECT_EQ(directory.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(directory.status().message().find("a directory"), std::string::npos) << directory.status().message();

  // A FIFO with no writer: refused at once, never waited on.
  ASSERT_EQ(::mkfifo((dir / "fifo.yaml").c_str(), 0600), 0);
  auto fifo = env::ReadFile(dir / "fifo.yaml", 10);
  EXPECT_NE(fifo.status().message().find("a FIFO"), std::string::npos) << fifo.status().message();

  fs::create_symlink("loop.yaml", dir / "loop.yaml");
  auto loop = env::ReadFile(dir / "loop.yaml", 10);
  EXPECT_NE(loop.status().message().find("symbolic link loop"), std::string::npos) << loop.status().message();
}

TEST(ClockTest, AManualClockMovesOnlyWhenAdvancedAndBothReadingsTogether) {
  env::ManualClock clock;
  const auto steady = clock.Steady();
  const auto now = clock.Now();
  EXPECT_GT(steady, env::Clock::SteadyTime{});  // past a default time_point, as a real one is
  EXPECT_EQ(clock.Steady(), steady);
  clock.Advance(std::chrono::milliseconds(1500));
  EXPECT_EQ(clock.Steady() - steady, std::chrono::milliseconds(1500));
  EXPECT_EQ(clock.Now() - now, std::chrono::milliseconds(1500));
  clock.Advance(-std::chrono::hours(1));  // never back
  EXPECT_EQ(clock.Now() - now, std::chrono::milliseconds(1500));
}

// A fleet simulation's clock: started 2 real seconds ago at 1000x, it reads about 2,000
// simulated seconds past its start, and two clocks built alike agree.
TEST(ClockTest, AScaledClockRunsFasterFromItsEpochAndTwoAgree) {
  const auto start = std::chrono::system_clock::time_point(std::chrono::seconds(1893456000));
  const auto epoch = std::chrono::system_clock::now() - std::chrono::seconds(2);
  env::ScaledClock a(start, 1000, epoch), b(start, 1000, epoch);
  const double ahead = std::chrono::duration<double>(a.Now() - start).count();
  EXPECT_GE(ahead, 2000);
  EXPECT_LT(ahead, 2000 + 1000 * 5) << "5 real seconds at most went by meanwhile, even on a busy machine";
  const double apart = std::chrono::duration<double>(b.Now() - a.Now()).count();
  // Read one after the other from the wall clock, which may step back by microseconds.
  EXPECT_GT(apart, -1.0);
  EXPECT_LT(apart, 1000 * 1.0);
  const auto s1 = a.Steady(), s2 = a.Steady();
  EXPECT_LE(s1, s2);
}

TEST(FileLockTest, ASecondHolderIsRefusedAndToldWho) {
  TempDir dir;
  auto first = env::FileLock::Acquire(dir / ".lock");
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto second = env::FileLock::Acquire(dir / ".lock");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("pid " + std::to_string(::getpid())), std::string::npos)
      << second.status().message();
  (*first)->Release();
  EXPECT_TRUE(env::FileLock::Acquire(dir / ".lock").ok());
}

TEST(ApiAccessTest, BearerTokensMatchExactlyWhateverTheSchemesCase) {
  const std::string good = "Bearer s3cret", lower = "bearer s3cret", upper = "BEARER s3cret";
  EXPECT_TRUE(kube::BearerTokenMatches(&good, "s3cret"));
  EXPECT_TRUE(kube::BearerTokenMatches(&lower, "s3cret"));
  EXPECT_TRUE(kube::BearerTokenMatches(&upper, "s3cret"));
  for (std::string bad : {"Bearer s3cre", "Bearer s3cret2", "Basic s3cret", "Bearers3cret", "Bearer ", "s3cret"}) {
    EXPECT_FALSE(kube::BearerTokenMatches(&bad, "s3cret")) << bad;
  }
  EXPECT_FALSE(kube::BearerTokenMatches(nullptr, "s3cret"));
  EXPECT_FALSE(kube::BearerTokenMatches(&good, ""));
}

TEST(ApiAccessTest, ListenersOffLoopbackNeedATokenAndAddressesAreBracketed) {
  EXPECT_TRUE(kube::RequireTokenOffLoopback("--listen", "127.0.0.1", false).ok());
  EXPECT_TRUE(kube::RequireTokenOffLoopback("--listen", "localhost", false).ok());
  EXPECT_TRUE(kube::RequireTokenOffLoopback("--listen", "::1", false).ok());
  EXPECT_FALSE(kube::RequireTokenOffLoopback("--listen", "0.0.0.0", false).ok());
  EXPECT_FALSE(kube::RequireTokenOffLoopback("--listen", "::", false).ok());
  EXPECT_TRUE(kube::RequireTokenOffLoopback("--listen", "0.0.0.0", true).ok());
  EXPECT_EQ(kube::HostPort("::1", 80), "[::1]:80");
  EXPECT_EQ(kube::HostPort("127.0.0.1", 80), "127.0.0.1:80");
  const std::string json = "application/json; charset=utf-8", form = "application/x-www-form-urlencoded";
  EXPECT_TRUE(kube::IsJsonRequest(&json, {"application/json"}));
  EXPECT_FALSE(kube::IsJsonRequest(&form, {"application/json"}));
  EXPECT_FALSE(kube::IsJsonRequest(nullptr, {"application/json"}));
}

}  // namespace
}  // namespace cincinnati
