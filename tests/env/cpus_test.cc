// env::UsableCpus: thread pools sized to the CPUs this process may use, not the machine's.
#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

#include "env/cpus.h"

namespace cincinnati {
namespace {

TEST(UsableCpusTest, ACgroupQuotaIsRoundedUpAndNoLimitIsNone) {
  EXPECT_EQ(env::CpusOfQuota("150000 100000\n"), 2u);
  EXPECT_EQ(env::CpusOfQuota("100000 100000"), 1u);
  EXPECT_EQ(env::CpusOfQuota("50000 100000"), 1u);
  EXPECT_EQ(env::CpusOfQuota("400000 100000"), 4u);
  EXPECT_EQ(env::CpusOfQuota("max 100000\n"), std::nullopt);
  EXPECT_EQ(env::CpusOfQuota(""), std::nullopt);
  EXPECT_EQ(env::CpusOfQuota("100000"), std::nullopt);
  EXPECT_EQ(env::CpusOfQuota("0 100000"), std::nullopt);
  EXPECT_EQ(env::CpusOfQuota("-5 100000"), std::nullopt);
  EXPECT_EQ(env::CpusOfQuota("100000 0"), std::nullopt);
  EXPECT_EQ(env::CpusOfQuota("1e5 100000"), std::nullopt);
}

// A thread pinned to one CPU (as taskset pins a process) may use one CPU, whatever the
// machine has; the pin is the thread's own, so the rest of the test binary is unaffected.
TEST(UsableCpusTest, AThreadPinnedToOneCpuMayUseOne) {
  size_t machine = 0, pinned = 0;
  bool pinned_ok = false;
  std::thread([&] {
    machine = env::UsableCpus();
    cpu_set_t mask;
    CPU_ZERO(&mask);
    ASSERT_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
    int first = -1;
    for (int cpu = 0; cpu < CPU_SETSIZE && first < 0; ++cpu) {
      if (CPU_ISSET(cpu, &mask)) first = cpu;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    pinned_ok = sched_setaffinity(0, sizeof(one), &one) == 0;
    pinned = env::UsableCpus();
  }).join();
  ASSERT_TRUE(pinned_ok);
  EXPECT_GE(machine, 1u);
  EXPECT_LE(machine, static_cast<size_t>(CPU_SETSIZE));
  EXPECT_EQ(pinned, 1u);
}

}  // namespace
}  // namespace cincinnati
