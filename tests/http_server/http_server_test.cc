#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio.hpp>

#include "http_server/content_negotiation.h"
#include "http/client.h"
#include "http_server/http_server.h"
#include "http_server/metrics.h"
#include "http_server/query.h"
#include "service/responses.h"

namespace cincinnati::server {
namespace {

TEST(ContentNegotiationTest, ReferenceVectors) {
  const std::vector<std::string> offered{std::string(kCincinnatiV1)};
  auto negotiate = [&](const char* accept) {
    std::string value = accept ? accept : "";
    return NegotiateContentType(accept ? &value : nullptr, offered);
  };
  EXPECT_EQ(negotiate(nullptr), std::string(kCincinnatiV1));
  EXPECT_EQ(negotiate("application/json"), "application/json");
  EXPECT_EQ(negotiate("*/*"), "application/json");
  EXPECT_EQ(negotiate("*"), "application/json");
  EXPECT_EQ(negotiate("application/*"), "application/json");
  EXPECT_EQ(negotiate("application/vnd.redhat.cincinnati.v1+json"), std::string(kCincinnatiV1));
  EXPECT_FALSE(negotiate("application/json, text/plain").has_value());
  EXPECT_FALSE(negotiate("application/json;q=0.9").has_value());
  EXPECT_FALSE(negotiate(" application/json").has_value());
  EXPECT_FALSE(negotiate("app/anything-really").has_value());
  std::string text = "text/*";
  EXPECT_EQ(NegotiateContentType(&text, {"text/html"}, "text/plain"), "text/plain");
}

TEST(ContentNegotiationTest, AcceptsGzip) {
  auto gz = [](const char* h) {
    std::string v = h;
    return AcceptsGzip(&v);
  };
  EXPECT_TRUE(gz("gzip"));
  EXPECT_TRUE(gz("deflate, gzip;q=0.5"));
  EXPECT_TRUE(gz("*"));
  EXPECT_FALSE(gz("gzip;q=0"));
  EXPECT_FALSE(gz("br, deflate"));
  EXPECT_FALSE(AcceptsGzip(nullptr));
}

TEST(QueryTest, FormUrlEncoding) {
  auto p = ParseQuery("channel=fast-4%2E9&arch=amd64&channel=stable-4.9&x=a+b&empty=&flag");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->at("channel"), "stable-4.9");
  EXPECT_EQ(p->at("x"), "a b");
  EXPECT_EQ(p->at("empty"), "");
  EXPECT_EQ(p->at("flag"), "");
  EXPECT_FALSE(ParseQuery("a=%zz").ok());
  EXPECT_FALSE(ParseQuery("a=%4").ok());
  EXPECT_EQ(ParseQuery("a=%4").status().code(), Status::Code::kInvalidParams);
  // Not UTF-8 once decoded: each ill-formed sequence becomes U+FFFD, as from_utf8_lossy.
  EXPECT_EQ(ParseQuery("channel=a%ffb%C3%28%E2%82").value().at("channel"), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD(\xEF\xBF\xBD");
  EXPECT_EQ(ParseQuery("k%C3%A9=%E2%82%AC").value().at("k\xC3\xA9"), "\xE2\x82\xAC");
  EXPECT_EQ(ParseQuery("a=\xff%zz").status().message(), "malformed percent-encoding in '\xEF\xBF\xBD%zz'");
  EXPECT_TRUE(QueryHasKey("channel=&arch=x", "channel"));
  EXPECT_TRUE(QueryHasKey("ch%61nnel", "channel"));
  EXPECT_FALSE(QueryHasKey("channels=a", "channel"));
}

TEST(ResponsesTest, PathPrefixNormalization) {
  EXPECT_EQ(NormalizePathPrefix(""), "");
  EXPECT_EQ(NormalizePathPrefix("/"), "");
  EXPECT_EQ(NormalizePathPrefix("//a/b//"), "/a/b");
  EXPECT_EQ(NormalizePathPrefix("api/upgrades_info"), "/api/upgrades_info");
}

TEST(MetricsTest, RendersTextExposition) {
  Registry r("cincinnati_pe_");
  r.AddCounter("requests_total", "Requests", {"uri_path"}).With({"/graph"}).Increment(3);
  r.AddGauge("ready", "Ready").Get().Set(1);
  auto& h = r.AddHistogram("duration_seconds", "Duration", {0.1, 1}).Get();
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(7);
  r.AddCounter("errors_total", "Errors", {"code", "kind"});
  std::string text = r.Render();
  EXPECT_NE(text.find("# TYPE cincinnati_pe_requests_total counter\ncincinnati_pe_requests_total{uri_path=\"/graph\"} 3\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("cincinnati_pe_ready 1\n"), std::string::npos);
  EXPECT_NE(text.find("cincinnati_pe_duration_seconds_bucket{le=\"0.1\"} 1\n"
                      "cincinnati_pe_duration_seconds_bucket{le=\"1\"} 2\n"
                      "cincinnati_pe_duration_seconds_bucket{le=\"+Inf\"} 3\n"
                      "cincinnati_pe_duration_seconds_sum 7.55\n"
                      "cincinnati_pe_duration_seconds_count 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE cincinnati_pe_errors_total counter\n"), std::string::npos);
}

// A server on an ephemeral port with one slow and one quick route.
class HttpServerTest : public ::testing::Test {
 protected:
  void Start(ServerLimits limits = {}) {
    limits.threads = 2;
    server_ = std::make_unique<HttpServer>(limits);
    auto port = server_->ListenAsync("127.0.0.1", 0, [this](const Request& r, std::function<void(Response)> done) {
      if (r.path == "/slow") {
        if (!slow_signalled_.exchange(true)) slow_arrived_.set_value();
        std::lock_guard lock(answering_mu_);
        answering_.emplace_back([done] {
          std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the slow answer itself
          done(Response::Text(200, "slow"));
        });
        return;
      }
      done(Response::Text(200, r.method + " " + r.target));
    });
    ASSERT_TRUE(port.ok());
    port_ = *port;
    server_->Start();
  }
  std::string Url(const std::string& path) { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
  std::promise<void> slow_arrived_;
  std::atomic<bool> slow_signalled_{false};
  // The slow answers' threads, joined before the server goes (declared after it): a
  // responder holds its session, whose end touches the server.
  std::mutex answering_mu_;
  std::vector<std::jthread> answering_;
};

TEST_F(HttpServerTest, AnswersAndBoundsTheRequestHead) {
  Start({.max_head_bytes = 2048});
  auto ok = http::Get(Url("/x?y=1"));
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "GET /x?y=1");
  auto big = http::Get(Url("/x"), {.headers = {"X-Big: " + std::string(4096, 'a')}});
  EXPECT_EQ(big.status, 431);
  auto long_line = http::Get(Url("/" + std::string(4096, 'b')));
  EXPECT_EQ(long_line.status, 431);
  EXPECT_EQ(http::Get(Url("/again")).status, 200);  // still serving others
}

TEST_F(HttpServerTest, IdleConnectionsAreClosed) {
  Start({.first_request_timeout = std::chrono::milliseconds(200)});
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket socket(ioc);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), port_});
  auto start = std::chrono::steady_clock::now();
  char buf[16];
  boost::system::error_code ec;
  socket.read_some(boost::asio::buffer(buf), ec);  // returns when the server closes
  EXPECT_TRUE(ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset) << ec.message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

// An answer that takes longer to compute than the write timeout is still sent: the
// timeout starts once it is ready (it used to start with the request, so a view drawn
// for over a minute on a slow machine was cut off).
TEST_F(HttpServerTest, ASlowAnswerIsSentWhateverTheWriteTimeout) {
  Start({.write_timeout = std::chrono::milliseconds(50)});
  auto slow = http::Get(Url("/slow"), {.timeout = std::chrono::seconds(10)});
  EXPECT_EQ(slow.status, 200) << slow.error;
  EXPECT_EQ(slow.body, "slow");
}

TEST_F(HttpServerTest, ShutdownFinishesInFlightRequests) {
  Start();
  auto slow = std::async(std::launch::async, [this] { return http::Get(Url("/slow")); });
  // In flight once the handler has it.
  ASSERT_EQ(slow_arrived_.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  auto begin = std::chrono::steady_clock::now();
  server_->Shutdown(std::chrono::seconds(5));
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(4));
  auto r = slow.get();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "slow");
  EXPECT_NE(http::Get(Url("/after"), {.timeout = std::chrono::seconds(2)}).status, 200);
}

}  // namespace
}  // namespace cincinnati::server
