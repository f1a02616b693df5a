// LongPolls against a real HTTP server on 127.0.0.1 that holds its answers: many polls
// wait at once on one thread, each gets its own answer when the server gives it, a
// timeout and a body over the cap are errors, and destroying the object cancels the
// polls still waiting. Tests wait for the answers, never for a duration.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "http/long_polls.h"
#include "http_server/http_server.h"

namespace cincinnati::http {
namespace {

using namespace std::chrono_literals;

// Holds every request until Release(); answers each with its own path.
class HoldingServer {
 public:
  HoldingServer() {
    auto port = server_.ListenAsync("127.0.0.1", 0, [this](const http_server::Request& r, std::function<void(http_server::Response)> done) {
      std::lock_guard lock(mu_);
      held_.push_back({r.path, std::move(done)});
      arrived_.notify_all();
    });
    port_ = port.ok() ? *port : 0;
    server_.Start();
  }
  ~HoldingServer() {
    Release("");
    server_.Shutdown(100ms);
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  bool WaitHeld(size_t n) {
    std::unique_lock lock(mu_);
    return arrived_.wait_for(lock, 60s, [&] { return held_.size() >= n; });
  }
  void Release(const std::string& padding) {
    std::vector<std::pair<std::string, std::function<void(http_server::Response)>>> held;
    {
      std::lock_guard lock(mu_);
      held.swap(held_);
    }
    for (auto& [path, done] : held) done(http_server::Response::Text(200, path + padding));
  }

 private:
  http_server::HttpServer server_;
  std::mutex mu_;
  std::condition_variable arrived_;
  std::vector<std::pair<std::string, std::function<void(http_server::Response)>>> held_;
  uint16_t port_ = 0;
};

struct Answers {
  std::mutex mu;
  std::condition_variable got;
  std::vector<Result> results;
  std::function<void(Result)> Collect() {
    return [this](Result r) {
      std::lock_guard lock(mu);
      results.push_back(std::move(r));
      got.notify_all();
    };
  }
  bool WaitFor(size_t n) {
    std::unique_lock lock(mu);
    return got.wait_for(lock, 60s, [&] { return results.size() >= n; });
  }
};

TEST(LongPollsTest, ManyPollsWaitAtOnceAndEachGetsItsOwnAnswer) {
  HoldingServer server;
  Answers answers;
  LongPolls polls;
  for (int i = 0; i < 200; ++i) polls.Start({server.url("/w" + std::to_string(i)), {}, "", 60s}, answers.Collect());
  ASSERT_TRUE(server.WaitHeld(200));  // all 200 are open at the same time
  EXPECT_EQ(polls.running(), 200u);
  EXPECT_TRUE(answers.results.empty());
  server.Release("");
  ASSERT_TRUE(answers.WaitFor(200));
  std::set<std::string> bodies;
  for (const Result& r : answers.results) {
    EXPECT_TRUE(r.ok()) << r.error;
    bodies.insert(r.body);
  }
  EXPECT_EQ(bodies.size(), 200u);
  EXPECT_TRUE(bodies.count("/w7"));
  EXPECT_EQ(polls.running(), 0u);
}

TEST(LongPollsTest, ATimeoutAndABodyOverTheCapAreErrors) {
  HoldingServer server;
  Answers answers;
  LongPolls polls(16);
  polls.Start({server.url("/late"), {}, "", 300ms}, answers.Collect());  // never answered in time
  ASSERT_TRUE(answers.WaitFor(1));
  EXPECT_EQ(answers.results[0].error_kind, ErrorKind::kTransport);
  EXPECT_NE(answers.results[0].error.find("/late"), std::string::npos) << answers.results[0].error;
  polls.Start({server.url("/big"), {}, "", 60s}, answers.Collect());
  ASSERT_TRUE(server.WaitHeld(2));
  server.Release(std::string(100, 'x'));
  ASSERT_TRUE(answers.WaitFor(2));
  EXPECT_EQ(answers.results[1].error_kind, ErrorKind::kBodyTooLarge);
}

TEST(LongPollsTest, DestroyingThePollsCancelsThoseStillWaiting) {
  HoldingServer server;
  Answers answers;
  {
    LongPolls polls;
    for (int i = 0; i < 3; ++i) polls.Start({server.url("/w"), {}, "", 60s}, answers.Collect());
    ASSERT_TRUE(server.WaitHeld(3));
  }
  ASSERT_EQ(answers.results.size(), 3u);  // every `done` was called before the destructor returned
  for (const Result& r : answers.results) EXPECT_EQ(r.error_kind, ErrorKind::kCancelled);
}

}  // namespace
}  // namespace cincinnati::http
