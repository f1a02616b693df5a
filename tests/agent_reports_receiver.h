// A reports endpoint for the agent's update-report tests: a real HTTP server on
// 127.0.0.1 (ephemeral port) that records every request and answers what the test
// queued (else the default answer, 200 unless set). It is also an update service's
// graph endpoint (graph_url()) as far as poll receipts go: a GET of .../graph is answered
// with an empty graph and the receipt "r-<version>-<n>" (the n-th poll at that
// version), and the receipt header each poll and report carried is recorded.
// Thread-safe.
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/update_report.h"
#include "http_server/http_server.h"

namespace cincinnati::testing {

class ReportReceiver {
 public:
  struct Answer {
    int status = 200;
    std::string body = R"({"result":"accepted"})";
    std::string retry_after;  // "": no Retry-After header
  };
  struct Received {
    std::string method, path, query, content_type, body;
    int answered = 0;
    std::optional<std::string> receipt;  // the Cincinnati-Poll-Receipt header
  };

  ReportReceiver() : server_(http_server::ServerLimits{.threads = 1}) {
    port_ = *server_.ListenAsync("127.0.0.1", 0, [this](const http_server::Request& r, auto done) {
      if (r.path.ends_with("/graph")) return done(Graph(r));
      Answer answer;
      {
        std::lock_guard lock(mu_);
        if (!queued_.empty()) {
          answer = queued_.front();
          queued_.pop_front();
        } else {
          answer = default_;
        }
        const std::string* type = r.Header("Content-Type");
        received_.push_back({r.method, r.path, r.query, type ? *type : "", r.body, answer.status, ReceiptOf(r)});
      }
      http_server::Response response = http_server::Response::Text(answer.status, answer.body, "application/json");
      if (!answer.retry_after.empty()) response.headers["Retry-After"] = answer.retry_after;
      done(std::move(response));
    });
    server_.Start();
  }
  ~ReportReceiver() { server_.Shutdown(std::chrono::seconds(1)); }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/api/upgrades_info/v1/reports"; }
  std::string graph_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/api/upgrades_info/graph"; }
  // The graph requests, in order: their query and the receipt each carried.
  std::vector<Received> polls() {
    std::lock_guard lock(mu_);
    return polls_;
  }
  void Queue(Answer answer) {
    std::lock_guard lock(mu_);
    queued_.push_back(std::move(answer));
  }
  void SetDefault(Answer answer) {
    std::lock_guard lock(mu_);
    default_ = std::move(answer);
  }
  std::vector<Received> received() {
    std::lock_guard lock(mu_);
    return received_;
  }
  size_t count() { return received().size(); }
  // The reports the receiver took (a 2xx answer), decoded; a body that does not decode
  // fails the test.
  std::vector<UpdateReport> taken() {
    std::vector<UpdateReport> out;
    for (const auto& r : received()) {
      if (r.answered < 200 || r.answered >= 300) continue;
      auto report = DecodeUpdateReport(r.body);
      EXPECT_TRUE(report.ok()) << report.status().message() << "\n" << r.body;
      if (report.ok()) out.push_back(*report);
    }
    return out;
  }

 private:
  static std::optional<std::string> ReceiptOf(const http_server::Request& r) {
    const std::string* receipt = r.Header("Cincinnati-Poll-Receipt");
    return receipt ? std::make_optional(*receipt) : std::nullopt;
  }
  http_server::Response Graph(const http_server::Request& r) {
    std::lock_guard lock(mu_);
    polls_.push_back({r.method, r.path, r.query, "", "", 200, ReceiptOf(r)});
    const size_t at = r.query.find("version=");
    const std::string version = at == std::string::npos ? "" : r.query.substr(at + 8, r.query.find('&', at) - at - 8);
    http_server::Response response = http_server::Response::Text(200, R"({"nodes":[],"edges":[]})", "application/json");
    response.headers["Cincinnati-Poll-Receipt"] = "r-" + version + "-" + std::to_string(++polls_at_[version]);
    return response;
  }

  http_server::HttpServer server_;
  int port_ = 0;
  std::mutex mu_;
  std::deque<Answer> queued_;
  Answer default_;
  std::vector<Received> received_;
  std::vector<Received> polls_;
  std::map<std::string, int> polls_at_;
};

}  // namespace cincinnati::testing
