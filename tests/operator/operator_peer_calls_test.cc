// The operator's calls to its peers on real HTTP (127.0.0.1): a broken watch of an agent
// reconnects with back-off and reports the change it hid, and a command without an
// answer says its outcome is unknown.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "http/long_polls.h"
#include "http_server/http_server.h"
#include "operator/agent_client.h"
#include "operator/http_call.h"

namespace cincinnati::upgrade {
namespace {
using namespace std::chrono_literals;

constexpr auto kPatience = 60s;  // a safety net only: every wait ends at its event

// The agent's watch endpoint, answering 503 (as while it restarts) to the first
// `breaks` watches, then the changed ClusterVersion.
class RestartingAgent {
 public:
  explicit RestartingAgent(int breaks) : breaks_(breaks) {
    auto port = server_.ListenAsync("127.0.0.1", 0, [this](const http_server::Request&, std::function<void(http_server::Response)> done) {
      if (++watches_ <= breaks_) {
        done(http_server::Response::Text(503, "restarting\n"));
        return;
      }
      done(http_server::Response::Text(200, R"({"type":"MODIFIED","object":{"apiVersion":"config.openshift.io/v1","kind":"ClusterVersion",)"
                                            R"("metadata":{"name":"version","resourceVersion":"8"},"spec":{"clusterID":"x"},"status":{}}})",
                                       "application/json"));
    });
    port_ = port.ok() ? *port : 0;
    server_.Start();
  }
  ~RestartingAgent() { server_.Shutdown(100ms); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int watches() const { return watches_; }

 private:
  const int breaks_;
  std::atomic<int> watches_{0};
  http_server::HttpServer server_;
  uint16_t port_ = 0;
};

TEST(AgentWatchTest, ABrokenWatchReconnectsAndReportsTheChangeItHid) {
  RestartingAgent agent(4);
  http::LongPolls polls;
  HttpUpdateAgent client(AgentEndpoint{agent.url(), "", "", 10s, &polls});
  std::promise<bool> changed;
  ASSERT_TRUE(client.Watch(7, 60s, [&](bool c) { changed.set_value(c); }));
  auto answer = changed.get_future();
  ASSERT_EQ(answer.wait_for(kPatience), std::future_status::ready);
  EXPECT_TRUE(answer.get());
  EXPECT_EQ(agent.watches(), 5);  // four breaks, then the answer
}

TEST(AgentWatchTest, AWatchThatStaysBrokenEndsWithoutAChangeAtItsDeadline) {
  RestartingAgent agent(1000000);
  http::LongPolls polls;
  HttpUpdateAgent client(AgentEndpoint{agent.url(), "", "", 10s, &polls});
  std::promise<bool> changed;
  ASSERT_TRUE(client.Watch(7, 1s, [&](bool c) { changed.set_value(c); }));
  auto answer = changed.get_future();
  ASSERT_EQ(answer.wait_for(kPatience), std::future_status::ready);
  EXPECT_FALSE(answer.get());
  // Backed off: 0, 50, 100, 200, 400 ms... within one second, not thousands of tries.
  EXPECT_GE(agent.watches(), 3);
  EXPECT_LE(agent.watches(), 8);
}

// A command that got no answer may still have been delivered: its error says the outcome
// is unknown, not that sending failed. One that could not connect was never sent.
TEST(PeerCallTest, ACommandWithoutAnAnswerSaysItsOutcomeIsUnknown) {
  std::mutex mu;
  std::vector<std::function<void(http_server::Response)>> held;
  http_server::HttpServer server;
  auto port = server.ListenAsync("127.0.0.1", 0, [&](const http_server::Request&, std::function<void(http_server::Response)> done) {
    std::lock_guard lock(mu);
    held.push_back(std::move(done));  // received, never answered (a peer that is paused)
  });
  ASSERT_TRUE(port.ok());
  server.Start();
  const std::string url = "http://127.0.0.1:" + std::to_string(*port) + "/apis/config.openshift.io/v1/clusterversions/version";
  auto patched = CallPeer({"", "", 1000ms, {}}, "PATCH", url, R"({"spec":{}})", "application/merge-patch+json");
  ASSERT_FALSE(patched.ok());
  EXPECT_NE(patched.status().message().find("the request may have been delivered (its outcome is unknown)"), std::string::npos)
      << patched.status().message();
  auto read = CallPeer({"", "", 1000ms, {}}, "GET", url);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message().find("may have been delivered"), std::string::npos) << read.status().message();
  {
    std::lock_guard lock(mu);
    for (auto& done : held) done(http_server::Response::Text(200, "late\n"));
    held.clear();  // a responder holds its connection, whose end touches the server: before it goes
  }
  server.Shutdown(100ms);
  auto refused = CallPeer({"", "", 1000ms, {}}, "PATCH", url, R"({"spec":{}})");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message().find("may have been delivered"), std::string::npos) << refused.status().message();
}

}  // namespace
}  // namespace cincinnati::upgrade
