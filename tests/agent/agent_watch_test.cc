// The agent's watch of its ClusterVersion (agent/cluster_version_watch.h): a watch waits
// while the resourceVersion is the one it saw, is answered with the new object at the
// first change, ends empty at its timeout or at shutdown, and never waits when it is one
// too many. Tests wait for the answers, never for a duration.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <vector>

#include "agent/cluster_version_watch.h"

namespace cincinnati::agent {
namespace {

using namespace std::chrono_literals;
using kube::JsonValue;
using kube::JsonObject;

class WatchesTest : public ::testing::Test {
 protected:
  ClusterVersionWatches::Respond Collect() {
    return [this](http_server::Response r) {
      std::lock_guard lock(mu_);
      answers_.push_back(r.body ? *r.body : "");
      got_.notify_all();
    };
  }
  bool WaitFor(size_t n) {
    std::unique_lock lock(mu_);
    return got_.wait_for(lock, 60s, [&] { return answers_.size() >= n; });
  }
  size_t Answered() {
    std::lock_guard lock(mu_);
    return answers_.size();
  }
  JsonValue Current() {
    std::lock_guard lock(mu_);
    return JsonValue(JsonObject({{"metadata", JsonValue(JsonObject({{"resourceVersion", JsonValue(std::to_string(rv_))}}))}}));
  }

  std::mutex mu_;
  std::condition_variable got_;
  std::vector<std::string> answers_;
  int64_t rv_ = 7;
};

TEST_F(WatchesTest, AWatchWaitsForTheFirstChangeAndGetsTheNewObject) {
  ClusterVersionWatches watches([this] { return Current(); }, 7);
  watches.Wait(7, 300s, Collect());
  watches.Wait(7, 300s, Collect());
  EXPECT_EQ(watches.waiting(), 2u);
  EXPECT_EQ(Answered(), 0u);
  {
    std::lock_guard lock(mu_);
    rv_ = 8;
  }
  watches.Changed(8);
  ASSERT_TRUE(WaitFor(2));
  for (const std::string& body : answers_) {
    EXPECT_EQ(body, "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"resourceVersion\":\"8\"}}}\n");
  }
  EXPECT_EQ(watches.waiting(), 0u);
}

TEST_F(WatchesTest, AnOldOrMissingVersionIsAnsweredAtOnce) {
  ClusterVersionWatches watches([this] { return Current(); }, 7);
  watches.Wait(5, 300s, Collect());
  watches.Wait(std::nullopt, 300s, Collect());
  EXPECT_EQ(Answered(), 2u);  // on this thread, before Wait returned
  EXPECT_EQ(watches.waiting(), 0u);
}

TEST_F(WatchesTest, AWatchEndsEmptyAtItsTimeoutOrAtShutdown) {
  ClusterVersionWatches watches([this] { return Current(); }, 7);
  watches.Wait(7, 1s, Collect());
  watches.Wait(7, 300s, Collect());
  ASSERT_TRUE(WaitFor(1));
  EXPECT_EQ(answers_[0], "");  // the 1 s watch
  EXPECT_EQ(watches.waiting(), 1u);
  watches.EndAll();
  ASSERT_TRUE(WaitFor(2));
  EXPECT_EQ(answers_[1], "");
  watches.Wait(7, 300s, Collect());  // after EndAll: answered at once, as a poll
  EXPECT_EQ(Answered(), 3u);
  EXPECT_NE(answers_[2].find("MODIFIED"), std::string::npos);
}

TEST_F(WatchesTest, AWatchBeyondTheLimitIsAPoll) {
  ClusterVersionWatches watches([this] { return Current(); }, 7, 1);
  watches.Wait(7, 300s, Collect());
  watches.Wait(7, 300s, Collect());
  EXPECT_EQ(watches.waiting(), 1u);
  EXPECT_EQ(Answered(), 1u);
}

}  // namespace
}  // namespace cincinnati::agent
