// The nginx harness (tests/nginx_balancer.h) balances as replicated services need it:
// round robin over its upstreams, bodies passed on, a stopped upstream skipped, and
// with next_upstream off a stopped upstream's failure handed to the client.
#include "nginx_balancer.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "http/client.h"
#include "http_server/http_server.h"

namespace cincinnati {
namespace {

using testing::NginxBalancer;

// A tiny service that answers every request with its name (and, to a POST, the body
// it got after its name).
class NamedServer {
 public:
  explicit NamedServer(std::string name) : name_(std::move(name)) {
    http_server::ServerLimits limits;
    limits.threads = 1;
    limits.max_body_bytes = 1 << 20;
    server_ = std::make_unique<http_server::HttpServer>(limits);
    port_ = *server_->Listen("127.0.0.1", 0, [this](const http_server::Request& r) {
      return http_server::Response::Text(200, r.method == "POST" ? name_ + ":" + r.body : name_, "text/plain");
    });
    server_->Start();
  }
  ~NamedServer() { Stop(); }
  uint16_t port() const { return port_; }
  // Stops listening, as a replica that went away.
  void Stop() {
    if (server_) server_->Shutdown(std::chrono::milliseconds(2000));
    server_.reset();
  }

 private:
  std::string name_;
  std::unique_ptr<http_server::HttpServer> server_;
  uint16_t port_ = 0;
};

http::Result Fetch(const std::string& url, const std::string& body = "") {
  http::RequestOptions options;
  options.timeout = std::chrono::seconds(10);
  options.accept_gzip = false;
  if (!body.empty()) {
    options.method = "POST";
    options.body = body;
    options.headers.push_back("Content-Type: text/plain");
  }
  return http::Request(url, options);
}

class NginxBalancerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!NginxBalancer::Available()) GTEST_SKIP() << NginxBalancer::kBinary << " is missing (scripts/deps.sh --test installs nginx-light)";
  }
};

TEST_F(NginxBalancerTest, RoundRobinReachesEveryUpstreamAndPassesBodies) {
  NamedServer a("a"), b("b");
  NginxBalancer nginx({a.port(), b.port()});
  ASSERT_TRUE(nginx.ready()) << nginx.error();
  EXPECT_NE(nginx.port(), 0);
  std::map<std::string, int> seen;
  for (int i = 0; i < 10; ++i) {
    http::Result got = Fetch(nginx.url("/graph?i=" + std::to_string(i)));
    ASSERT_EQ(got.status, 200) << got.error << "\n" << nginx.log();
    ++seen[got.body];
  }
  // Round robin: both, about evenly (nginx's smooth weighted round robin alternates).
  EXPECT_EQ(seen.size(), 2u) << nginx.log();
  EXPECT_GE(seen["a"], 4) << nginx.log();
  EXPECT_GE(seen["b"], 4) << nginx.log();

  const std::string body(100 * 1024, 'x');  // larger than nginx's in-memory body buffer
  for (int i = 0; i < 4; ++i) {
    http::Result got = Fetch(nginx.url("/v1/reports"), body);
    ASSERT_EQ(got.status, 200) << got.error << "\n" << nginx.log();
    EXPECT_TRUE(got.body == "a:" + body || got.body == "b:" + body) << got.body.substr(0, 40);
  }
  EXPECT_NE(nginx.access_log().find("POST /v1/reports 200"), std::string::npos) << nginx.log();
}

TEST_F(NginxBalancerTest, AStoppedUpstreamIsSkipped) {
  NamedServer a("a"), b("b");
  NginxBalancer nginx({a.port(), b.port()});
  ASSERT_TRUE(nginx.ready()) << nginx.error();
  for (int i = 0; i < 4; ++i) ASSERT_EQ(Fetch(nginx.url("/")).status, 200);  // connections to both kept alive
  a.Stop();
  for (int i = 0; i < 10; ++i) {
    http::Result got = Fetch(nginx.url("/graph"));
    EXPECT_EQ(got.status, 200) << got.error << "\n" << nginx.log();
    EXPECT_EQ(got.body, "b");
    got = Fetch(nginx.url("/v1/reports"), "report");  // a POST never reached the stopped one: moved on too
    EXPECT_EQ(got.status, 200) << got.error << "\n" << nginx.log();
    EXPECT_EQ(got.body, "b:report");
  }
}

// Never leaving the stopped upstream out (max_fails 0), every other request meets it
// first and is moved on to the live one: still no failure, and the access log shows
// the requests that tried both.
TEST_F(NginxBalancerTest, EveryRequestThatMeetsAStoppedUpstreamMovesOn) {
  NamedServer a("a"), b("b");
  NginxBalancer nginx({a.port(), b.port()}, {.max_fails = 0});
  ASSERT_TRUE(nginx.ready()) << nginx.error();
  const uint16_t stopped = a.port();
  a.Stop();
  for (int i = 0; i < 10; ++i) {
    http::Result got = Fetch(nginx.url("/graph"));
    EXPECT_EQ(got.status, 200) << got.error << "\n" << nginx.log();
    EXPECT_EQ(got.body, "b");
  }
  const std::string tried_both = "upstream=127.0.0.1:" + std::to_string(stopped) + ", 127.0.0.1:" + std::to_string(b.port());
  size_t moved_on = 0;
  for (size_t at = nginx.access_log().find(tried_both); at != std::string::npos; at = nginx.access_log().find(tried_both, at + 1)) ++moved_on;
  EXPECT_GE(moved_on, 4u) << nginx.log();
}

// The same with next_upstream off: the request that meets the stopped upstream fails
// (502), which shows the option reaches nginx, and the default's retries are real.
TEST_F(NginxBalancerTest, WithoutNextUpstreamAStoppedUpstreamFailsARequest) {
  NamedServer a("a"), b("b");
  NginxBalancer nginx({a.port(), b.port()}, {.next_upstream = "off"});
  ASSERT_TRUE(nginx.ready()) << nginx.error();
  a.Stop();
  int failed = 0, answered = 0;
  for (int i = 0; i < 10; ++i) {
    http::Result got = Fetch(nginx.url("/graph"));
    if (got.status == 502) ++failed;
    if (got.status == 200 && got.body == "b") ++answered;
  }
  EXPECT_GE(failed, 1) << nginx.log();
  EXPECT_EQ(failed + answered, 10) << nginx.log();
}

// A port taken between the harness's choice and nginx's bind (another test's server,
// say) costs an attempt, not the test: nginx is started again on another port.
TEST_F(NginxBalancerTest, APortTakenMeanwhileIsReplaced) {
  NamedServer a("a"), squatter("squatter");
  NginxBalancer nginx({a.port()}, {.first_port = squatter.port()});
  ASSERT_TRUE(nginx.ready()) << nginx.error();
  EXPECT_NE(nginx.port(), squatter.port());
  EXPECT_EQ(Fetch(nginx.url("/")).body, "a");
  // And a balancer that never gets a port says why.
  NginxBalancer stuck({a.port()}, {.attempts = 1, .first_port = squatter.port()});
  EXPECT_FALSE(stuck.ready());
  EXPECT_NE(stuck.error().find("Address already in use"), std::string::npos) << stuck.error();
}

// Two balancers at once take two ports, and each stops with its object.
TEST_F(NginxBalancerTest, PortsAreDistinctAndTheProcessStops) {
  NamedServer a("a");
  auto first = std::make_unique<NginxBalancer>(std::vector<uint16_t>{a.port()});
  NginxBalancer second({a.port()});
  ASSERT_TRUE(first->ready()) << first->error();
  ASSERT_TRUE(second.ready()) << second.error();
  EXPECT_NE(first->port(), second.port());
  const pid_t pid = first->pid();
  const std::string url = first->url("/");
  EXPECT_EQ(Fetch(url).body, "a");
  first.reset();
  EXPECT_NE(::kill(pid, 0), 0);  // reaped: no such process
  EXPECT_NE(Fetch(url).status, 200);
  EXPECT_EQ(Fetch(second.url("/")).body, "a");
}

}  // namespace
}  // namespace cincinnati
