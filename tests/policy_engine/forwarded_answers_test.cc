// The policy engine's upstream state machine (a pure transition table) and its cache
// of forwarded answers, driven through its fetch function on a real one-thread pool and
// a manual clock: TTLs, staleness and the fetch budget are stepped past, never waited for.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "env/clock.h"
#include "policy_engine/forwarded_answers.h"
#include "policy_engine/upstream_state.h"

namespace cincinnati::server {
namespace {

using S = UpstreamState;
using O = FetchOutcome;

TEST(UpstreamStateTest, AutoDetectsAndKeepsProbing) {
  const auto k = UpstreamKind::kAuto;
  EXPECT_EQ(InitialUpstreamState(false, k), S::kDetecting);
  EXPECT_EQ(NextUpstreamState(S::kDetecting, k, O::kFailed), S::kDetecting);
  EXPECT_EQ(NextUpstreamState(S::kDetecting, k, O::kGraph), S::kServing);
  EXPECT_EQ(NextUpstreamState(S::kDetecting, k, O::kPolicyEngineAnswer), S::kForwarding);
  EXPECT_EQ(NextUpstreamState(S::kServing, k, O::kFailed), S::kServingStale);
  EXPECT_EQ(NextUpstreamState(S::kServing, k, O::kUnchanged), S::kServing);
  EXPECT_EQ(NextUpstreamState(S::kServingStale, k, O::kFailed), S::kServingStale);
  EXPECT_EQ(NextUpstreamState(S::kServingStale, k, O::kUnchanged), S::kServing);
  EXPECT_EQ(NextUpstreamState(S::kServingStale, k, O::kGraph), S::kServing);
  EXPECT_EQ(NextUpstreamState(S::kServing, k, O::kPolicyEngineAnswer), S::kForwarding);
  // Forwarding is left as soon as the URL serves a graph: not a policy engine for good.
  EXPECT_EQ(NextUpstreamState(S::kForwarding, k, O::kFailed), S::kForwarding);
  EXPECT_EQ(NextUpstreamState(S::kForwarding, k, O::kPolicyEngineAnswer), S::kForwarding);
  EXPECT_EQ(NextUpstreamState(S::kForwarding, k, O::kUnchanged), S::kForwarding);
  EXPECT_EQ(NextUpstreamState(S::kForwarding, k, O::kGraph), S::kServing);
}

TEST(UpstreamStateTest, ConfiguredKindsNeverSwitch) {
  const auto gb = UpstreamKind::kGraphBuilder, pe = UpstreamKind::kPolicyEngine;
  EXPECT_EQ(InitialUpstreamState(false, gb), S::kWaitingForGraph);
  EXPECT_EQ(NextUpstreamState(S::kWaitingForGraph, gb, O::kPolicyEngineAnswer), S::kWaitingForGraph);
  EXPECT_EQ(NextUpstreamState(S::kWaitingForGraph, gb, O::kGraph), S::kServing);
  EXPECT_EQ(NextUpstreamState(S::kServing, gb, O::kPolicyEngineAnswer), S::kServingStale);
  EXPECT_EQ(InitialUpstreamState(false, pe), S::kForwarding);
  for (O o : {O::kGraph, O::kUnchanged, O::kPolicyEngineAnswer, O::kFailed}) {
    EXPECT_EQ(NextUpstreamState(S::kForwarding, pe, o), S::kForwarding);
    EXPECT_EQ(NextUpstreamState(S::kInProcess, UpstreamKind::kAuto, o), S::kInProcess);
  }
  EXPECT_EQ(InitialUpstreamState(true, pe), S::kInProcess);
  EXPECT_TRUE(ParseUpstreamKind("graph-builder").ok());
  EXPECT_FALSE(ParseUpstreamKind("gb").ok());
}

// A fetch function whose answers the test sets, counting calls.
class Upstream {
 public:
  ForwardedAnswer Fetch(const ForwardedQuery& q, bool& failed) {
    calls++;
    std::unique_lock<std::mutex> lock(mu);
    released.wait(lock, [&] { return !hold; });
    failed = fail;
    if (fail) return {nullptr, ErrorDocument::Of("failed_upstream_fetch", "down")};
    if (!error_kind.empty()) return {nullptr, ErrorDocument::Of(error_kind, q.key)};
    return {std::make_shared<const View>(body_prefix + q.key), std::nullopt};
  }
  void Hold(bool on) {
    {
      std::lock_guard<std::mutex> lock(mu);
      hold = on;
    }
    released.notify_all();
  }
  std::atomic<int> calls{0};
  std::mutex mu;
  std::condition_variable released;
  bool hold = false;
  bool fail = false;
  std::string error_kind;
  std::string body_prefix = "answer to ";
};

class ForwardedAnswersTest : public ::testing::Test {
 protected:
  void Make(ForwardedAnswersOptions options) {
    options.clock = &clock_;
    answers_ = std::make_unique<ForwardedAnswers>(
        options, [this](const ForwardedQuery& q, bool& failed) { return upstream_.Fetch(q, failed); }, pool_, stale_,
        throttled_);
  }
  ~ForwardedAnswersTest() override {
    upstream_.Hold(false);
    pool_.join();
  }
  // Blocks until the answer comes (bounded).
  ForwardedAnswer Get(const std::string& key, const std::string& without_id = "") {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<ForwardedAnswer> out;
    answers_->Get({key, without_id, {}}, [&](const ForwardedAnswer& a) {
      std::lock_guard<std::mutex> lock(mu);
      out = a;
      cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return out.has_value(); }));
    return out.value_or(ForwardedAnswer{});
  }
  // Returns once every fetch started so far has finished: the pool has one thread, so a
  // task posted now runs after them.
  void Settle() {
    std::promise<void> done;
    boost::asio::post(pool_, [&] { done.set_value(); });
    ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  }
  static std::string Body(const ForwardedAnswer& a) { return a.view ? *a.view->body() : "error:" + a.error->kind; }
  double CountOf(const std::string& name) {
    std::string text = registry_.Render();
    size_t at = text.find("\n" + name + " ");
    return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
  }

  env::ManualClock clock_;
  Upstream upstream_;
  boost::asio::thread_pool pool_{1};
  Registry registry_{""};
  Counter& stale_ = registry_.AddCounter("stale", "").Get();
  Counter& throttled_ = registry_.AddCounter("throttled", "").Get();
  std::unique_ptr<ForwardedAnswers> answers_;
};

TEST_F(ForwardedAnswersTest, FreshAnswersComeFromMemoryAndIdenticalQueriesShareOneFetch) {
  Make({.ttl = std::chrono::seconds(60)});
  upstream_.Hold(true);
  std::atomic<int> answered{0};
  for (int i = 0; i < 10; ++i) {
    answers_->Get({"channel=a", "", {}}, [&](const ForwardedAnswer& a) {
      EXPECT_EQ(Body(a), "answer to channel=a");
      answered++;
    });
  }
  EXPECT_EQ(answered, 0);  // all wait for the one fetch
  upstream_.Hold(false);
  Settle();
  EXPECT_EQ(answered, 10);
  EXPECT_EQ(Body(Get("channel=a")), "answer to channel=a");
  EXPECT_EQ(upstream_.calls, 1);
}

TEST_F(ForwardedAnswersTest, AnAnswerIsRefreshedExactlyWhenItsTtlEnds) {
  Make({.ttl = std::chrono::seconds(60)});
  EXPECT_EQ(Body(Get("q")), "answer to q");
  clock_.Advance(std::chrono::seconds(60) - std::chrono::milliseconds(1));
  EXPECT_EQ(Body(Get("q")), "answer to q");
  Settle();
  EXPECT_EQ(upstream_.calls, 1);
  clock_.Advance(std::chrono::milliseconds(1));
  upstream_.body_prefix = "new answer to ";
  EXPECT_EQ(Body(Get("q")), "answer to q");  // at once, while the refresh runs
  Settle();
  EXPECT_EQ(upstream_.calls, 2);
  EXPECT_EQ(Body(Get("q")), "new answer to q");
  EXPECT_EQ(CountOf("stale"), 0);
}

TEST_F(ForwardedAnswersTest, AFailedRefreshKeepsTheLastGoodAnswerUntilMaxStale) {
  Make({.ttl = std::chrono::milliseconds(50), .max_stale = std::chrono::milliseconds(600)});
  EXPECT_EQ(Body(Get("q")), "answer to q");
  upstream_.fail = true;
  clock_.Advance(std::chrono::milliseconds(80));
  // Past the TTL: served at once while the refresh runs, then as a stale answer.
  EXPECT_EQ(Body(Get("q")), "answer to q");
  Settle();
  EXPECT_EQ(upstream_.calls, 2);
  EXPECT_EQ(CountOf("stale"), 0);
  EXPECT_EQ(Body(Get("q")), "answer to q");
  EXPECT_EQ(CountOf("stale"), 1);
  // Up to max_stale after the last good answer it is still served...
  clock_.Advance(std::chrono::milliseconds(520));
  EXPECT_EQ(Body(Get("q")), "answer to q");
  Settle();
  EXPECT_EQ(upstream_.calls, 3);
  // ...past it, the failure is.
  clock_.Advance(std::chrono::milliseconds(60));
  EXPECT_EQ(Body(Get("q")), "error:failed_upstream_fetch");
  EXPECT_EQ(upstream_.calls, 4);
  // And a good answer again once the upstream is back.
  upstream_.fail = false;
  clock_.Advance(std::chrono::milliseconds(80));
  EXPECT_EQ(Body(Get("q")), "answer to q");
  EXPECT_EQ(upstream_.calls, 5);
}

TEST_F(ForwardedAnswersTest, AnUpstreamErrorDocumentIsAnAnswerNotAFailure) {
  Make({.ttl = std::chrono::milliseconds(50)});
  EXPECT_EQ(Body(Get("q")), "answer to q");
  upstream_.error_kind = "invalid_params";
  clock_.Advance(std::chrono::milliseconds(80));
  EXPECT_EQ(Body(Get("q")), "answer to q");  // at once, while the refresh runs
  Settle();
  EXPECT_EQ(Body(Get("q")), "error:invalid_params");
  EXPECT_EQ(CountOf("stale"), 0);
}

TEST_F(ForwardedAnswersTest, BoundedInEntriesAndBytesLeastRecentlyUsedFirst) {
  Make({.ttl = std::chrono::seconds(60), .max_entries = 3});
  for (const char* q : {"a", "b", "c"}) Get(q);
  Get("a");  // most recent now
  Get("d");  // evicts b, the least recently used
  EXPECT_EQ(answers_->size(), 3u);
  const int calls = upstream_.calls;
  Get("a");
  Get("c");
  Get("d");
  EXPECT_EQ(upstream_.calls, calls);
  Get("b");
  EXPECT_EQ(upstream_.calls, calls + 1);

  upstream_.body_prefix = std::string(1000, 'x');
  Make({.ttl = std::chrono::seconds(60), .max_bytes = 5000});
  for (int i = 0; i < 20; ++i) Get("q" + std::to_string(i));
  EXPECT_LE(answers_->bytes(), 5000u);
  EXPECT_LE(answers_->size(), 5u);
  EXPECT_GE(answers_->size(), 3u);
}

TEST_F(ForwardedAnswersTest, OverTheFetchBudgetAnIdGetsTheGeneralAnswer) {
  Make({.ttl = std::chrono::seconds(60), .max_fetches_per_second = 1});
  EXPECT_EQ(Body(Get("channel=a")), "answer to channel=a");  // the burst's one token
  EXPECT_EQ(Body(Get("channel=a&id=1", "channel=a")), "answer to channel=a");
  EXPECT_EQ(Body(Get("channel=b&id=1", "channel=b")), "error:failed_upstream_fetch");
  EXPECT_EQ(CountOf("throttled"), 2);
  EXPECT_EQ(upstream_.calls, 1);
  clock_.Advance(std::chrono::milliseconds(900));  // not a token yet
  EXPECT_EQ(Body(Get("channel=a&id=1", "channel=a")), "answer to channel=a");
  EXPECT_EQ(upstream_.calls, 1);
  clock_.Advance(std::chrono::milliseconds(200));  // a token again
  EXPECT_EQ(Body(Get("channel=a&id=1", "channel=a")), "answer to channel=a&id=1");
  EXPECT_EQ(upstream_.calls, 2);
}

}  // namespace
}  // namespace cincinnati::server
