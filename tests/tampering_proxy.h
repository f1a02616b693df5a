// A proxy on the path to an update service, for the signed-answer tests: it
// passes GETs on (with their Accept header) and keeps the last 200 answer to each
// target while recording; frozen, it replays what it kept, headers and all; `Tamper`
// changes what it passes on (a forged error, rewritten headers). What a compromised
// mirror, a stale cache or a man in the middle can do, on real HTTP.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "http/client.h"
#include "http_server/http_server.h"

namespace cincinnati::testing {

class TamperingProxy {
 public:
  using Tamper = std::function<void(http_server::Response&)>;
  explicit TamperingProxy(std::string upstream) : upstream_(std::move(upstream)), server_(http_server::ServerLimits{.threads = 2}) {
    port_ = *server_.ListenAsync("127.0.0.1", 0, [this](const http_server::Request& r, auto done) { done(Answer(r)); });
    server_.Start();
  }
  ~TamperingProxy() { server_.Shutdown(std::chrono::seconds(1)); }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  void Freeze(bool frozen) { frozen_ = frozen; }
  void Record(bool recording) { recording_ = recording; }
  void SetTamper(Tamper tamper) {
    std::lock_guard lock(mu_);
    tamper_ = std::move(tamper);
  }
  int replayed() const { return replayed_; }
  int tampered() const { return tampered_; }

 private:
  http_server::Response Answer(const http_server::Request& r) {
    const std::string target = r.path + "?" + r.query;
    const std::string* accept = r.Header("Accept");
    const std::string key = (accept ? *accept : std::string()) + " " + target;  // a graph and its records differ by Accept
    if (frozen_) {
      std::lock_guard lock(mu_);
      if (auto it = kept_.find(key); it != kept_.end()) {
        ++replayed_;
        return it->second;
      }
    }
    http::Result got = http::Get(upstream_ + target, {.headers = {"Accept: " + (accept ? *accept : std::string("*/*"))}, .accept_gzip = false});
    const std::string* type = got.Header("Content-Type");
    http_server::Response response = http_server::Response::Text(got.status == 0 ? 502 : static_cast<int>(got.status), got.body,
                                                                 type ? *type : "application/json");
    for (const char* name : {"Cincinnati-Signature", "Cincinnati-Graph-Generation", "Cincinnati-Graph-Fresh", "ETag"}) {
      if (const std::string* v = got.Header(name)) response.headers[name] = *v;
    }
    std::lock_guard lock(mu_);
    if (got.status == 200 && recording_) kept_[key] = response;
    if (tamper_) {
      tamper_(response);
      ++tampered_;
    }
    return response;
  }

  const std::string upstream_;
  http_server::HttpServer server_;
  uint16_t port_ = 0;
  std::atomic<bool> frozen_{false}, recording_{true};
  std::atomic<int> replayed_{0}, tampered_{0};
  std::mutex mu_;
  Tamper tamper_;  // under mu_
  std::map<std::string, http_server::Response> kept_;  // under mu_
};

}  // namespace cincinnati::testing
