// fake_agent_fleet: many clusters' update agents behind one port, each answering after a
// round trip like a remote cluster's (--delay-ms, 50 by default), for measuring the
// upgrade operator at fleet scale (operator_fleet_bench.cc) without thousands of
// processes. Cluster i lives under /c<i>: its ClusterVersion (at 4.1.0, offering 4.1.1
// with 68 more updates, like a real channel) and its ClusterOperators (30 components),
// the agent's paths. A PATCH of spec.desiredUpdate is the command: the cluster then
// reports 4.1.1 Completed (the operator's completion path runs too) and the time of
// the first command is kept. A watch of the ClusterVersion (?watch=true&resourceVersion=N,
// as our agent's) is answered at once when the object changed since N, else empty at its
// timeout. GET /stats answers "commanded <n> last_ms <ms since start>".
//
// Answers wait on one timer thread, not a thread each, so 10,000 clusters polled at once
// cost no more threads than one. Runs until SIGTERM.
//
//   fake_agent_fleet --clusters N [--delay-ms D] --port-file FILE
#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "http_server/http_server.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace hs = cincinnati::http_server;

// Calls each closure at its time, on one thread.
class DelayLine {
 public:
  DelayLine() : thread_([this] { Loop(); }) {}
  ~DelayLine() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void At(Clock::time_point when, std::function<void()> fn) {
    {
      std::lock_guard lock(mu_);
      queue_.push({when, seq_++, std::move(fn)});
    }
    cv_.notify_all();
  }

 private:
  struct Item {
    Clock::time_point when;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Item& o) const { return when != o.when ? when > o.when : seq > o.seq; }
  };
  void Loop() {
    std::unique_lock lock(mu_);
    while (!stop_) {
      if (queue_.empty()) {
        cv_.wait(lock);
        continue;
      }
      if (Clock::now() < queue_.top().when) {
        cv_.wait_until(lock, queue_.top().when);
        continue;
      }
      std::function<void()> fn = std::move(const_cast<Item&>(queue_.top()).fn);
      queue_.pop();
      lock.unlock();
      fn();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> queue_;
  uint64_t seq_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

std::string Updates() {
  std::string updates = R"({"version":"4.1.1","image":"quay.io/ocp/release@sha256:)" + std::string(64, '1') + R"("})";
  for (int i = 2; i < 70; ++i) updates += fmt::format(R"(,{{"version":"4.1.{}","image":"quay.io/ocp/release@sha256:{:064}"}})", i, i);
  return updates;
}

std::string ClusterVersion(int cluster, bool commanded, const std::string& updates) {
  const std::string id = fmt::format("00000000-0000-4000-8000-{:012}", cluster);
  const std::string at = commanded ? "4.1.1" : "4.1.0";
  const std::string history =
      commanded ? R"({"state":"Completed","version":"4.1.1","image":"quay.io/ocp/release@sha256:411","startedTime":"2026-11-25T00:00:00Z","completionTime":"2026-11-25T00:01:00Z","verified":true},)"
                : "";
  return fmt::format(
      R"({{"apiVersion":"config.openshift.io/v1","kind":"ClusterVersion","metadata":{{"name":"version","resourceVersion":"{}"}},
"spec":{{"clusterID":"{}","channel":"stable-4.1","upstream":"http://127.0.0.1:1/graph"{}}},
"status":{{"desired":{{"version":"{}","image":"quay.io/ocp/release@sha256:{}"}},
"history":[{}{{"state":"Completed","version":"4.1.0","image":"quay.io/ocp/release@sha256:410","startedTime":"2026-11-01T00:00:00Z","completionTime":"2026-11-01T00:30:00Z","verified":false}}],
"availableUpdates":[{}],"conditionalUpdates":[],
"conditions":[{{"type":"Available","status":"True"}},{{"type":"Progressing","status":"False"}},{{"type":"Failing","status":"False"}},{{"type":"Upgradeable","status":"True"}}]}}}})",
      commanded ? 2 : 1, id, commanded ? R"(,"desiredUpdate":{"version":"4.1.1"})" : "", at, commanded ? "411" : "410", history, commanded ? "" : updates);
}

std::string Operators() {
  std::string items;
  for (int i = 0; i < 30; ++i) {
    items += fmt::format(R"({}{{"apiVersion":"config.openshift.io/v1","kind":"ClusterOperator","metadata":{{"name":"component-{}"}},
"status":{{"versions":[{{"name":"operator","version":"4.1.0"}}],"conditions":[{{"type":"Available","status":"True"}},{{"type":"Degraded","status":"False"}},{{"type":"Progressing","status":"False"}}]}}}})",
                         i ? "," : "", i);
  }
  return R"({"apiVersion":"config.openshift.io/v1","kind":"ClusterOperatorList","items":[)" + items + "]}";
}

}  // namespace

int main(int argc, char** argv) {
  int clusters = 0, delay_ms = 50;
  std::string port_file;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--clusters") clusters = std::atoi(argv[i + 1]);
    else if (flag == "--delay-ms") delay_ms = std::atoi(argv[i + 1]);
    else if (flag == "--port-file") port_file = argv[i + 1];
    else {
      fmt::print(stderr, "fake_agent_fleet: unknown flag {}\n", flag);
      return 2;
    }
  }
  if (clusters < 1 || port_file.empty()) {
    fmt::print(stderr, "usage: fake_agent_fleet --clusters N [--delay-ms D] --port-file FILE\n");
    return 2;
  }
  const std::string updates = Updates(), operators = Operators();
  const auto started = Clock::now();
  std::mutex mu;
  std::vector<bool> commanded(static_cast<size_t>(clusters) + 1, false);
  int commanded_count = 0;
  double last_command_ms = 0;
  DelayLine delay;

  hs::ServerLimits limits;
  limits.threads = 2;
  limits.max_body_bytes = 64 * 1024;
  hs::HttpServer server(limits);
  auto port = server.ListenAsync("127.0.0.1", 0, [&](const hs::Request& r, std::function<void(hs::Response)> done) {
    if (r.path == "/stats") {
      std::lock_guard lock(mu);
      done(hs::Response::Text(200, fmt::format("commanded {} last_ms {:.0f}\n", commanded_count, last_command_ms)));
      return;
    }
    int cluster = 0;
    size_t slash = r.path.find('/', 1);
    if (r.path.rfind("/c", 0) == 0 && slash != std::string::npos) cluster = std::atoi(r.path.substr(2, slash - 2).c_str());
    if (cluster < 1 || cluster > clusters) {
      done(hs::Response::Text(404, "no such cluster\n"));
      return;
    }
    const std::string rest = r.path.substr(slash);
    hs::Response answer = hs::Response::Text(404, "not found\n");
    {
      std::lock_guard lock(mu);
      if (r.method == "PATCH" && rest == "/apis/config.openshift.io/v1/clusterversions/version") {
        if (r.body.find("desiredUpdate") != std::string::npos && !commanded[cluster]) {
          commanded[cluster] = true;
          ++commanded_count;
          last_command_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
        }
        answer = hs::Response::Text(200, ClusterVersion(cluster, commanded[cluster], updates), "application/json");
      } else if (rest == "/apis/config.openshift.io/v1/clusterversions/version" && r.query.find("watch=true") != std::string::npos) {
        // A watch: the object changes only when commanded (resourceVersion 1, then 2).
        const std::string current = commanded[cluster] ? "resourceVersion=2" : "resourceVersion=1";
        if (r.query.find(current) != std::string::npos) {
          int timeout = 60;
          if (size_t t = r.query.find("timeoutSeconds="); t != std::string::npos) timeout = std::atoi(r.query.c_str() + t + 15);
          delay.At(Clock::now() + std::chrono::seconds(timeout), [done = std::move(done)]() mutable {
            done(hs::Response::Text(200, "", "application/json"));
          });
          return;
        }
        answer = hs::Response::Text(200, R"({"type":"MODIFIED","object":)" + ClusterVersion(cluster, commanded[cluster], updates) + "}\n",
                                    "application/json");
      } else if (rest == "/apis/config.openshift.io/v1/clusterversions/version") {
        answer = hs::Response::Text(200, ClusterVersion(cluster, commanded[cluster], updates), "application/json");
      } else if (rest == "/apis/config.openshift.io/v1/clusteroperators") {
        answer = hs::Response::Text(200, operators, "application/json");
      }
    }
    delay.At(Clock::now() + std::chrono::milliseconds(delay_ms), [done = std::move(done), answer = std::move(answer)]() mutable { done(std::move(answer)); });
  });
  if (!port.ok()) {
    fmt::print(stderr, "fake_agent_fleet: {}\n", port.status().message());
    return 1;
  }
  server.CatchSignals();
  server.Start();
  {
    std::ofstream out(port_file + ".tmp");
    out << *port << "\n";
  }
  std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  server.WaitForSignal(std::chrono::seconds(1));
  return 0;
}
