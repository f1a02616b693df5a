// A small cluster-directory lookup service on 127.0.0.1 for tests: GET
// /clusters/<id> answers 200 with the cluster's JSON or 404; it can be switched to
// answer slowly, to fail with 500, or to disappear (stop listening).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http_server/http_server.h"

namespace cincinnati::testing {

class LookupServer {
 public:
  enum class Mode { kAnswer, kSlow, kError };

  explicit LookupServer(std::map<std::string, std::string> clusters) : clusters_(std::move(clusters)) {
    http_server::ServerLimits limits;
    limits.threads = 2;
    server_ = std::make_unique<http_server::HttpServer>(limits);
    port_ = *server_->ListenAsync("127.0.0.1", 0, [this](const http_server::Request& r, std::function<void(http_server::Response)> done) {
      ++requests_;
      const std::string prefix = "/clusters/";
      http_server::Response answer = http_server::Response::Empty(404);
      if (mode_ == Mode::kError) {
        answer = http_server::Response::Text(500, "directory is broken", "text/plain");
      } else if (r.path.rfind(prefix, 0) == 0) {
        std::lock_guard<std::mutex> lock(mu_);
        if (auto it = clusters_.find(r.path.substr(prefix.size())); it != clusters_.end()) {
          answer = http_server::Response::Text(200, it->second, "application/json");
        }
      }
      if (mode_ != Mode::kSlow) return done(std::move(answer));
      std::lock_guard<std::mutex> lock(mu_);
      slow_.emplace_back([answer = std::move(answer), done] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        done(answer);
      });
    });
    server_->Start();
  }
  ~LookupServer() { Stop(); }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void set_mode(Mode m) { mode_ = m; }
  void Set(const std::string& id, const std::string& json) {
    std::lock_guard<std::mutex> lock(mu_);
    clusters_[id] = json;
  }
  int requests() const { return requests_.load(); }
  // Disappears: the port stops accepting connections.
  void Stop() {
    std::vector<std::thread> slow;
    {
      std::lock_guard<std::mutex> lock(mu_);
      slow.swap(slow_);
    }
    for (auto& t : slow) t.join();
    if (server_) server_->Shutdown(std::chrono::milliseconds(2000));
    server_.reset();
  }

 private:
  std::map<std::string, std::string> clusters_;
  std::mutex mu_;
  std::vector<std::thread> slow_;
  std::atomic<Mode> mode_{Mode::kAnswer};
  std::atomic<int> requests_{0};
  std::unique_ptr<http_server::HttpServer> server_;
  uint16_t port_ = 0;
};

}  // namespace cincinnati::testing
