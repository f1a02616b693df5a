// Registry faults through a real HTTP proxy in front of the real docker-registry: the
// graph builder logs the cause, counts the failure, and keeps serving the last good
// graph; when the registry recovers, so does the graph builder.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "http/client.h"
#include "registry_util.h"
#include "server/http_server.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;

// Forwards every request to `upstream`; can answer tag listings with 500 or stall them,
// send blobs with a flipped byte (wrong digest) or cut in half (truncated), or go down
// (stop listening) and come back on the same port.
class FaultProxy {
 public:
  explicit FaultProxy(std::string upstream) : upstream_(std::move(upstream)) { Up(0); }
  ~FaultProxy() { Down(); }
  void Up(int port) {
    server_ = std::make_unique<server::HttpServer>(server::ServerLimits{.threads = 2});
    port_ = server_
                ->ListenAsync("127.0.0.1", static_cast<uint16_t>(port),
                              [this](const server::Request& r, std::function<void(server::Response)> done) {
                                std::thread([this, r, done] { done(Forward(r)); }).detach();
                              })
                .value();
    server_->Start();
  }
  void Down() {
    if (server_) server_->Shutdown(std::chrono::seconds(5));
    server_.reset();
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::atomic<bool> fail_tags{false};
  std::atomic<int> stall_tags_ms{0};
  std::atomic<bool> corrupt_blobs{false};
  std::atomic<bool> truncate_blobs{false};

 private:
  server::Response Forward(const server::Request& r) {
    bool tags = r.path.find("/tags/list") != std::string::npos;
    if (tags && fail_tags) return server::Response::Text(500, "injected failure");
    if (tags && stall_tags_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(stall_tags_ms.load()));
    http::RequestOptions o{.method = r.method, .accept_gzip = false, .head = r.method == "HEAD"};
    for (const auto& [k, v] : r.headers) {
      if (k == "Accept" || k == "Authorization" || k == "Content-Type") o.headers.push_back(k + ": " + v);
    }
    http::Result up = http::Request(upstream_ + r.target, o);
    server::Response out;
    out.status = up.error.empty() ? static_cast<int>(up.status) : 502;
    for (const char* h : {"Content-Type", "Docker-Content-Digest", "Link", "Location"}) {
      if (const std::string* v = up.Header(h)) out.headers[h] = *v;
    }
    bool blob = r.path.find("/blobs/sha256:") != std::string::npos && out.status == 200 && !up.body.empty();
    if (blob && corrupt_blobs) up.body[up.body.size() / 2] ^= 0x20;
    if (blob && truncate_blobs) up.body.resize(up.body.size() / 2);
    out.body = std::make_shared<const std::string>(std::move(up.body));
    return out;
  }

  std::string upstream_;
  std::unique_ptr<server::HttpServer> server_;
  int port_ = 0;
};

double Skipped(const testing::ServiceProcess& builder) {
  return testing::MetricValue(builder, "cincinnati_gb_graph_upstream_scrape_progress{item=\"tags_skipped\"}");
}

double Errors(const testing::ServiceProcess& builder) {
  return testing::MetricValue(builder, "cincinnati_gb_graph_upstream_errors_total");
}

TEST(RegistryFaultTest, FailuresKeepTheLastGoodGraph) {
  testing::LocalRegistry registry;
  ASSERT_TRUE(registry.ready());
  for (const char* args : {"--version 7.0.0", "--version 7.0.1 --previous 7.0.0"}) {
    std::string tag = std::string(args).substr(10, 5);
    auto r = testing::RunCincinnati(std::string("release new ") + args + " --to " + registry.url() + "/faults/release:" + tag);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  FaultProxy proxy(registry.url());
  testing::ServiceProcess builder(
      "graph-builder", {"--upstream.registry.url", proxy.url(), "--upstream.registry.repository", "faults/release",
                        "--graph-data", (testing::Examples() / "ocp-4x/graph-data").string(), "--service.pause_secs",
                        "1", "--service.scrape_timeout", "5"});
  ASSERT_TRUE(testing::WaitFor([&] { return testing::Get(builder.url("/readiness", "status")).status == 200; }))
      << builder.log();
  const std::string good = testing::Get(builder.url("/graph")).body;
  ASSERT_NE(good.find("7.0.1+amd64"), std::string::npos);

  // 500s from the registry.
  proxy.fail_tags = true;
  ASSERT_TRUE(testing::WaitFor([&] { return Errors(builder) >= 1; }, std::chrono::seconds(30))) << builder.log();
  EXPECT_NE(builder.log().find("listing tags of faults/release: HTTP 500"), std::string::npos) << builder.log();
  EXPECT_EQ(testing::Get(builder.url("/graph")).body, good);
  proxy.fail_tags = false;

  // A registry slower than the refresh timeout.
  double before = Errors(builder);
  proxy.stall_tags_ms = 7000;
  ASSERT_TRUE(testing::WaitFor([&] { return Errors(builder) > before; }, std::chrono::seconds(30))) << builder.log();
  EXPECT_NE(builder.log().find("refresh timed out"), std::string::npos) << builder.log();
  EXPECT_EQ(testing::Get(builder.url("/graph")).body, good);
  proxy.stall_tags_ms = 0;

  // Recovery: a new release shows up again.
  auto push = [&](const std::string& version, const std::string& previous) {
    auto r = testing::RunCincinnati("release new --version " + version + " --previous " + previous + " --to " +
                                    registry.url() + "/faults/release:" + version);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  auto shows = [&](const std::string& version) {
    return testing::WaitFor([&] {
      return testing::Get(builder.url("/graph")).body.find(version + "+amd64") != std::string::npos;
    }, std::chrono::seconds(30));
  };
  push("7.0.2", "7.0.1");
  ASSERT_TRUE(shows("7.0.2")) << builder.log();
  const std::string good2 = testing::Get(builder.url("/graph")).body;

  // A new release whose blobs arrive with a wrong digest, then cut short: the tag is
  // skipped (counted, logged with the cause), never half-read into the graph, and it
  // appears once the registry serves it intact.
  for (std::atomic<bool>* fault : {&proxy.corrupt_blobs, &proxy.truncate_blobs}) {
    std::string version = fault == &proxy.corrupt_blobs ? "7.0.3" : "7.0.4";
    std::string previous = fault == &proxy.corrupt_blobs ? "7.0.2" : "7.0.3";
    const std::string before_graph = testing::Get(builder.url("/graph")).body;
    *fault = true;
    push(version, previous);
    ASSERT_TRUE(testing::WaitFor([&] {
      return Skipped(builder) == 1 && builder.log().find(":" + version + ": skipped: blob sha256:") != std::string::npos;
    }, std::chrono::seconds(40))) << builder.log();
    EXPECT_NE(builder.log().find("content does not match digest"), std::string::npos) << builder.log();
    EXPECT_EQ(testing::Get(builder.url("/graph")).body, before_graph);
    EXPECT_EQ(testing::Get(builder.url("/readiness", "status")).status, 200);
    *fault = false;
    ASSERT_TRUE(shows(version)) << builder.log();
    EXPECT_EQ(Skipped(builder), 0);
  }
  const std::string good4 = testing::Get(builder.url("/graph")).body;

  // The registry goes away entirely, then comes back.
  double errors_before = Errors(builder);
  int port = proxy.port();
  proxy.Down();
  ASSERT_TRUE(testing::WaitFor([&] { return Errors(builder) >= errors_before + 2; }, std::chrono::seconds(40)))
      << builder.log();
  EXPECT_NE(builder.log().find("Couldn't connect to server"), std::string::npos) << builder.log();
  EXPECT_EQ(testing::Get(builder.url("/graph")).body, good4);
  proxy.Up(port);
  push("7.0.5", "7.0.4");
  ASSERT_TRUE(shows("7.0.5")) << builder.log();
  EXPECT_NE(builder.log().find("graph refresh succeeded again"), std::string::npos);
  EXPECT_EQ(builder.Stop(), 0);
}

}  // namespace
}  // namespace cincinnati
