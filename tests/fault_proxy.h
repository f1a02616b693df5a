// FaultProxy: a real HTTP server on 127.0.0.1 forwarding every request to a real
// registry, with faults switched on by tests: tag listings answered with 500 or
// stalled, blobs with a flipped byte, cut short or padded past their size, blob GETs
// redirected (to storage elsewhere, or to themselves). Requests under "/storage" play
// the object storage a registry redirects to: they are recorded and forwarded with the
// proxy's own credentials. The proxy answers from a fixed pool of worker threads,
// joined on destruction; Down() ends any stall at once.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/client.h"
#include "http_server/http_server.h"

namespace cincinnati::testing {

class FaultProxy {
 public:
  struct Seen {
    std::string method, target, host, authorization;  // authorization: "" when absent
  };

  // `storage_authorization`: the Authorization value "/storage" requests are
  // forwarded with (the storage's own access to the blobs).
  explicit FaultProxy(std::string upstream, std::string ca_path = "", std::string storage_authorization = "")
      : upstream_(std::move(upstream)), ca_path_(std::move(ca_path)),
        storage_authorization_(std::move(storage_authorization)) {
    for (int i = 0; i < kWorkers; ++i) workers_.emplace_back([this] { Work(); });
    Up(0);
  }
  ~FaultProxy() {
    Down();
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  void Up(int port) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      down_ = false;
    }
    server_ = std::make_unique<http_server::HttpServer>(http_server::ServerLimits{.threads = 2});
    port_ = server_
                ->ListenAsync("127.0.0.1", static_cast<uint16_t>(port),
                              [this](const http_server::Request& r, std::function<void(http_server::Response)> done) {
                                std::lock_guard<std::mutex> lock(mu_);
                                queue_.push_back({r, std::move(done)});
                                wake_.notify_all();
                              })
                .value();
    server_->Start();
  }
  void Down() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      down_ = true;  // ends stalls, so in-flight requests finish within the grace period
    }
    wake_.notify_all();
    if (server_) server_->Shutdown(std::chrono::seconds(5));
    // A responder holds its connection, whose end touches the server: every one is
    // answered or dropped before the server goes.
    std::deque<Job> unanswered;
    {
      std::unique_lock<std::mutex> lock(mu_);
      unanswered.swap(queue_);
      idle_.wait(lock, [this] { return busy_ == 0; });
    }
    unanswered.clear();
    server_.reset();
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Blob GETs that carry credentials are answered with `status` (302, 303, 307) and a
  // Location of `base` + "/storage" + the blob's path; 0: forwarded.
  void RedirectBlobs(int status, const std::string& base) {
    std::lock_guard<std::mutex> lock(mu_);
    redirect_status_ = status;
    redirect_base_ = base;
  }
  std::vector<Seen> seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

  std::atomic<bool> fail_tags{false};
  std::atomic<int> stall_tags_ms{0};
  std::atomic<bool> corrupt_blobs{false};
  std::atomic<bool> truncate_blobs{false};
  // Layer blobs (gzip) only, so that image configs still read and the scrape fails:
  std::atomic<bool> pad_layers{false};   // 1 KiB more than the registry sent
  std::atomic<bool> loop_layers{false};  // a 302 to the same URL

 private:
  static constexpr int kWorkers = 8;
  struct Job {
    http_server::Request request;
    std::function<void(http_server::Response)> done;
  };

  void Work() {
    while (true) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [this] { return quit_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
        ++busy_;
      }
      job.done(Forward(job.request));
      job = Job{};  // the responder dropped before the count says so (Down waits for it)
      {
        std::lock_guard<std::mutex> lock(mu_);
        --busy_;
      }
      idle_.notify_all();
    }
  }

  // Sleeps `ms` unless the proxy goes down meanwhile.
  void Stall(int ms) {
    std::unique_lock<std::mutex> lock(mu_);
    wake_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return down_ || quit_; });
  }

  static http_server::Response Redirect(int status, const std::string& location) {
    http_server::Response out = http_server::Response::Empty(status);
    out.headers["Location"] = location;
    return out;
  }

  http_server::Response Forward(const http_server::Request& r) {
    const std::string* auth = r.Header("Authorization");
    const std::string* host = r.Header("Host");
    std::string redirect_base;
    int redirect_status;
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.push_back({r.method, r.target, host ? *host : "", auth ? *auth : ""});
      redirect_status = redirect_status_;
      redirect_base = redirect_base_;
    }
    bool storage = r.target.rfind("/storage/", 0) == 0;
    std::string target = storage ? r.target.substr(8) : r.target;
    bool tags = r.path.find("/tags/list") != std::string::npos;
    bool blob = r.path.find("/blobs/sha256:") != std::string::npos && r.method == "GET";
    if (tags && fail_tags) return http_server::Response::Text(500, "injected failure");
    if (tags && stall_tags_ms > 0) Stall(stall_tags_ms.load());
    if (blob && !storage && auth && redirect_status != 0) return Redirect(redirect_status, redirect_base + "/storage" + target);

    http::RequestOptions o{.method = r.method, .accept_gzip = false, .ca_path = ca_path_, .head = r.method == "HEAD",
                           .max_redirects = 0};
    for (const auto& [k, v] : r.headers) {
      if (k == "Accept" || (k == "Authorization" && !storage) || k == "Content-Type") o.headers.push_back(k + ": " + v);
    }
    if (storage && !storage_authorization_.empty()) o.headers.push_back("Authorization: " + storage_authorization_);
    http::Result up = http::Request(upstream_ + target, o);
    http_server::Response out;
    out.status = up.error.empty() ? static_cast<int>(up.status) : 502;
    for (const char* h : {"Content-Type", "Docker-Content-Digest", "Link", "Location", "WWW-Authenticate"}) {
      if (const std::string* v = up.Header(h)) out.headers[h] = *v;
    }
    bool blob_body = blob && out.status == 200 && !up.body.empty();
    bool layer = blob_body && up.body.size() > 2 && static_cast<unsigned char>(up.body[0]) == 0x1f &&
                 static_cast<unsigned char>(up.body[1]) == 0x8b;
    if (layer && loop_layers) return Redirect(302, r.target);
    if (layer && pad_layers) up.body.append(1024, 'x');
    if (blob_body && corrupt_blobs) up.body[up.body.size() / 2] ^= 0x20;
    if (blob_body && truncate_blobs) up.body.resize(up.body.size() / 2);
    out.body = std::make_shared<const std::string>(std::move(up.body));
    return out;
  }

  const std::string upstream_, ca_path_, storage_authorization_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  int busy_ = 0;  // jobs a worker took and has not ended (under mu_)
  std::condition_variable idle_;  // busy_ reached 0
  bool quit_ = false, down_ = false;
  int redirect_status_ = 0;
  std::string redirect_base_;
  std::vector<Seen> seen_;
  std::vector<std::thread> workers_;
  std::unique_ptr<http_server::HttpServer> server_;
  int port_ = 0;
};

}  // namespace cincinnati::testing
