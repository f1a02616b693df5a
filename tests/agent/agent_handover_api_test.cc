// The agent's API through hand-overs, end to end on real parts (the fixture of
// update_test_fixture.h): the old agent passes its listening socket to the new one, so a
// client polling every 10 ms meets no refused or reset connection and no cut document,
// watches end whole and go on on the new agent, and the new process keeps the old one's
// name and command line.
#include <algorithm>
#include <future>
#include <iostream>
#include <mutex>
#include <set>

#include "update_test_fixture.h"

namespace cincinnati::agent {

using kube::FindMember;
using kube::IntegerOf;
using kube::TextOf;
namespace {

using namespace update_test;

// A client of the agent's API through hand-overs: every 10 ms a GET of the
// ClusterVersion and one of the update progress (which names the process that
// answered), each of which must be a whole answer: no refused or reset connection, no
// empty or cut document. Counts the polls, the failures and the processes seen.
class ApiPoller {
 public:
  explicit ApiPoller(std::string api) : api_(std::move(api)), thread_([this](std::stop_token stop) { Run(stop); }) {}
  struct Tally {
    size_t polls = 0;
    std::vector<std::string> failures;
    std::set<int64_t> pids;
    std::chrono::milliseconds slowest{0};
  };
  Tally Finish() {
    thread_.request_stop();
    thread_.join();
    std::lock_guard lock(mu_);
    return tally_;
  }
  bool Saw(int64_t pid) {
    std::lock_guard lock(mu_);
    return tally_.pids.count(pid) > 0;
  }

 private:
  void Run(std::stop_token stop) {
    while (!stop.stop_requested()) {
      Poll(kCv, [](const JsonValue& document) { return TextOf(At(document, {"kind"})) == "ClusterVersion"; });
      Poll("/apis/agent.cincinnati.openshift.io/v1/updateprogress", [this](const JsonValue& document) {
        const JsonValue* pid = FindMember(document, "agentPid");
        if (!pid || !IntegerOf(*pid)) return false;
        std::lock_guard lock(mu_);
        tally_.pids.insert(*IntegerOf(*pid));
        return true;
      });
      std::this_thread::sleep_for(10ms);  // the client's pace, not a wait for an event
    }
  }
  void Poll(const std::string& path, const std::function<bool(const JsonValue&)>& whole) {
    const auto start = std::chrono::steady_clock::now();
    const http::Result got = http::Get(api_ + path, {.timeout = kPatience, .accept_gzip = false});
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    const bool ok = got.status == 200 && whole(Json(got.body));
    std::lock_guard lock(mu_);
    ++tally_.polls;
    tally_.slowest = std::max(tally_.slowest, took);
    if (!ok) {
      tally_.failures.push_back(fmt::format("{}: status {} ({}) after {} ms, {} bytes: {}", path, got.status, got.error,
                                            took.count(), got.body.size(), got.body.substr(0, 80)));
    }
  }

  const std::string api_;
  std::mutex mu_;
  Tally tally_;
  std::jthread thread_;
};

// A watcher of the ClusterVersion through hand-overs, as an informer watches: it watches
// again as soon as a watch is answered, from the resourceVersion it last saw. Every
// answer must be whole: an event with the object, or the empty end of a watch that the
// agent ended (a hand-over's old agent ends its watches so that they move on).
class ClusterVersionWatcher {
 public:
  explicit ClusterVersionWatcher(std::string api) : api_(std::move(api)), thread_([this](std::stop_token stop) { Run(stop); }) {}
  struct Tally {
    size_t events = 0, ends = 0;
    std::vector<std::string> failures;
  };
  // Asks it to stop once the watch under way is answered (a change answers it).
  void RequestStop() { thread_.request_stop(); }
  Tally Join() {
    thread_.join();
    return tally_;  // the thread has ended
  }

 private:
  void Run(std::stop_token stop) {
    std::string version = TextOf(At(Json(Get(api_ + kCv).body), {"metadata", "resourceVersion"}));
    while (!stop.stop_requested()) {
      const http::Result got = http::Get(api_ + kCv + "?watch=true&timeoutSeconds=300&resourceVersion=" + version,
                                         {.timeout = kPatience, .accept_gzip = false});
      const JsonValue event = Json(got.body);
      const std::string seen = TextOf(At(event, {"object", "metadata", "resourceVersion"}));
      if (got.status == 200 && got.body.empty()) {
        ++tally_.ends;
      } else if (got.status == 200 && TextOf(At(event, {"type"})) == "MODIFIED" && !seen.empty()) {
        ++tally_.events;
        version = seen;
      } else {
        tally_.failures.push_back(fmt::format("status {} ({}), {} bytes: {}", got.status, got.error, got.body.size(),
                                              got.body.substr(0, 80)));
      }
    }
  }

  const std::string api_;
  Tally tally_;
  std::jthread thread_;
};

std::string ArgumentsOf(int64_t pid) {
  std::string cmdline = testing::ReadFile(fmt::format("/proc/{}/cmdline", pid));
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  return cmdline;
}

// Watches from `version` until an event shows `channel`, or one fails: the first watch
// is answered at once when the change came before it began.
http::Result WatchUntilChannel(const std::string& api, std::string version, const std::string& channel) {
  for (const auto give_up = std::chrono::steady_clock::now() + kPatience; std::chrono::steady_clock::now() < give_up;) {
    http::Result got = http::Get(api + kCv + "?watch=true&timeoutSeconds=300&resourceVersion=" + version,
                                 {.timeout = kPatience, .accept_gzip = false});
    const JsonValue event = Json(got.body);
    if (got.status != 200 || TextOf(At(event, {"object", "spec", "channel"})) == channel) return got;
    version = TextOf(At(event, {"object", "metadata", "resourceVersion"}));
  }
  return http::Result{};
}

// A change made now answers the watchers' last watches (each of whose answers was
// whole), and a new watch on the agent that now runs sees it.
void ExpectWatchesSeeAChangeOnTheNewAgent(const std::string& api,
                                          std::vector<std::unique_ptr<ClusterVersionWatcher>>& watchers) {
  for (auto& watcher : watchers) watcher->RequestStop();
  const std::string before = TextOf(At(Json(Get(api + kCv).body), {"metadata", "resourceVersion"}));
  ASSERT_FALSE(before.empty());
  auto watch = std::async(std::launch::async, [&] { return WatchUntilChannel(api, before, "stable-4.2"); });
  ASSERT_EQ(Send("PATCH", api + kCv, R"({"spec":{"channel":"stable-4.2"}})").status, 200);
  size_t ends = 0;
  for (auto& watcher : watchers) {
    const ClusterVersionWatcher::Tally watched = watcher->Join();
    EXPECT_TRUE(watched.failures.empty()) << watched.failures.size() << " watches failed, the first: " << watched.failures.front();
    EXPECT_GT(watched.events, 0u);
    ends += watched.ends;
  }
  std::cout << fmt::format("[ measured ] watches ended whole by a hand-over: {}\n", ends);
  const http::Result watched = watch.get();
  EXPECT_EQ(watched.status, 200) << watched.error;
  EXPECT_EQ(TextOf(At(Json(watched.body), {"object", "spec", "channel"})), "stable-4.2") << watched.body;
}

// The API through three hand-overs: a client polling every 10 ms never meets a refused
// or reset connection, or an empty or cut document, while the old agent stops accepting
// and its successor takes the listening socket over; watches open on the old agent end
// whole and go on on the new one. The new process keeps the name and command line.
TEST_F(UpdateTest, TheApiAnswersEveryRequestThroughTheHandOver) {
  constexpr int kRounds = 3;
  const std::string first = Push("4.1.1", "4.1.0"), second = Push("4.1.2", "4.1.1");
  Sign(first);
  Sign(second);
  auto agent = StartAgent();
  const std::string api = agent->url("");
  int64_t pid = AgentPid(api);
  ASSERT_GT(pid, 0);
  const std::string name = testing::ReadFile(fmt::format("/proc/{}/comm", pid));
  const std::string arguments = ArgumentsOf(pid);
  ApiPoller poller(api);
  std::vector<std::unique_ptr<ClusterVersionWatcher>> watchers;
  for (int i = 0; i < 3; ++i) watchers.push_back(std::make_unique<ClusterVersionWatcher>(api));
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("hand-over " + std::to_string(round + 1));
    const bool odd = round % 2;
    Request(*agent, odd ? second : first, odd ? "4.1.2" : "4.1.1", /*force=*/true);
    int64_t next = 0;
    ASSERT_TRUE(WaitFor([&] {
      next = AgentPid(api);
      return next > 0 && next != pid;
    }, kPatience)) << "no agent answers after the hand-over\n" << agent->log();
    pid = next;
    ASSERT_TRUE(WaitFor([&] { return poller.Saw(pid); }, kPatience)) << "the poller never reached the new agent";
    EXPECT_EQ(testing::ReadFile(fmt::format("/proc/{}/comm", pid)), name) << "ps -o comm= shows the same name";
    std::string expected = arguments;  // the hand-over names the port bound in place of 0
    expected.replace(expected.find(" --port 0 "), 10, " --port " + api.substr(api.rfind(':') + 1) + " ");
    EXPECT_EQ(ArgumentsOf(pid), expected) << "ps -o args= shows the same command line";
  }
  const ApiPoller::Tally polled = poller.Finish();
  std::cout << fmt::format("[ measured ] {} hand-overs: {} polls, {} failed, slowest {} ms\n", kRounds, polled.polls,
                           polled.failures.size(), polled.slowest.count());
  EXPECT_TRUE(polled.failures.empty()) << polled.failures.size() << " of " << polled.polls << " polls failed, the first: "
                                       << polled.failures.front();
  EXPECT_GE(polled.pids.size(), static_cast<size_t>(kRounds + 1)) << "the polls span every hand-over";
  EXPECT_EQ(name, "cincinnati\n");

  ExpectWatchesSeeAChangeOnTheNewAgent(api, watchers);
}

}  // namespace
}  // namespace cincinnati::agent
