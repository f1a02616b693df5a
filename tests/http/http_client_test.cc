// The HTTP client against real servers on 127.0.0.1: redirects (and where the
// Authorization header goes), loops, body limits, connection reuse and cancellation.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "http/client.h"
#include "http_server/gzip.h"
#include "http_server/http_server.h"
#include "service_util.h"

namespace cincinnati {
namespace {

using http::ErrorKind;

// A server that records what it is asked and answers from a table of routes.
class RecordingServer {
 public:
  struct Seen {
    std::string method, target, host, authorization;
  };
  using Route = std::function<http_server::Response(const http_server::Request&)>;

  explicit RecordingServer(Route route) : route_(std::move(route)) {
    port_ = server_
                .Listen("127.0.0.1", 0,
                        [this](const http_server::Request& r) {
                          {
                            std::lock_guard<std::mutex> lock(mu_);
                            const std::string* auth = r.Header("Authorization");
                            const std::string* host = r.Header("Host");
                            seen_.push_back({r.method, r.target, host ? *host : "", auth ? *auth : ""});
                          }
                          return route_(r);
                        })
                .value();
    server_.Start();
  }
  ~RecordingServer() { server_.Shutdown(std::chrono::seconds(2)); }

  int port() const { return port_; }
  std::string url(const std::string& host = "127.0.0.1") const { return "http://" + host + ":" + std::to_string(port_); }
  std::vector<Seen> seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  size_t open_connections() const { return server_.open_connections(); }

 private:
  Route route_;
  http_server::HttpServer server_{http_server::ServerLimits{.threads = 2}};
  int port_ = 0;
  mutable std::mutex mu_;
  std::vector<Seen> seen_;
};

http_server::Response Redirect(int status, const std::string& location) {
  http_server::Response r = http_server::Response::Empty(status);
  r.headers["Location"] = location;
  return r;
}

const RecordingServer::Seen* Find(const std::vector<RecordingServer::Seen>& seen, const std::string& target) {
  for (const auto& s : seen) {
    if (s.target == target) return &s;
  }
  return nullptr;
}

TEST(HttpClientTest, RedirectsKeepAuthorizationOnTheirOrigin) {
  RecordingServer storage([](const http_server::Request&) { return http_server::Response::Text(200, "from storage"); });
  std::string storage_url = storage.url();
  std::atomic<int> registry_port{0};  // known once the server listens
  RecordingServer registry([&](const http_server::Request& r) {
    if (r.path == "/to-storage") return Redirect(302, storage_url + "/blob");
    if (r.path == "/to-other-name") return Redirect(307, "http://localhost:" + std::to_string(registry_port.load()) + "/blob");
    if (r.path == "/relative") return Redirect(301, "/blob");
    return http_server::Response::Text(200, "from registry");
  });
  registry_port = registry.port();
  const std::vector<std::string> headers = {"Authorization: Bearer secret", "Accept: text/plain"};

  auto r = http::Request(registry.url() + "/to-storage", {.headers = headers});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.body, "from storage");
  EXPECT_EQ(r.url, storage.url() + "/blob");
  EXPECT_EQ(r.redirects, 1);
  // Another port on the same host is another origin.
  ASSERT_EQ(storage.seen().size(), 1u);
  EXPECT_EQ(storage.seen()[0].authorization, "");

  // The same server under another host name is another origin too.
  r = http::Request(registry.url() + "/to-other-name", {.headers = headers});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.body, "from registry");
  auto seen = registry.seen();
  const auto* by_name = Find(seen, "/blob");
  ASSERT_NE(by_name, nullptr);
  EXPECT_EQ(by_name->host, "localhost:" + std::to_string(registry.port()));
  EXPECT_EQ(by_name->authorization, "");
  EXPECT_EQ(Find(seen, "/to-other-name")->authorization, "Bearer secret");

  // A relative Location stays on the origin: the header goes along.
  r = http::Request(registry.url() + "/relative", {.headers = headers});
  ASSERT_TRUE(r.ok()) << r.error;
  seen = registry.seen();
  EXPECT_EQ(seen.back().target, "/blob");
  EXPECT_EQ(seen.back().authorization, "Bearer secret");

  // max_redirects 0: the redirect itself is the answer.
  r = http::Request(registry.url() + "/to-storage", {.headers = headers, .max_redirects = 0});
  EXPECT_EQ(r.status, 302);
  EXPECT_EQ(*r.Header("Location"), storage.url() + "/blob");
  EXPECT_EQ(storage.seen().size(), 1u);
}

TEST(HttpClientTest, SeeOtherContinuesWithGet) {
  RecordingServer server([](const http_server::Request& r) {
    if (r.path == "/post") return Redirect(303, "/result");
    if (r.path == "/put") return Redirect(307, "/result");
    return http_server::Response::Text(200, r.method);
  });
  auto r = http::Request(server.url() + "/post", {.method = "POST", .body = "x"});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.body, "GET");
  r = http::Request(server.url() + "/put", {.method = "PUT", .body = "x"});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.body, "PUT");  // 307 keeps the method
}

TEST(HttpClientTest, LoopsAndLongChainsFailNamingTheUrl) {
  RecordingServer server([](const http_server::Request& r) {
    if (r.path == "/loop") return Redirect(302, "/loop");
    if (r.path == "/a") return Redirect(302, "/b");
    if (r.path == "/b") return Redirect(307, "/a");
    if (r.path.rfind("/chain/", 0) == 0) return Redirect(302, "/chain/" + std::to_string(std::stoi(r.path.substr(7)) + 1));
    if (r.path == "/file") return Redirect(302, "file:///etc/passwd");
    return http_server::Response::Text(200, "end");
  });
  auto loop = http::Request(server.url() + "/loop");
  EXPECT_EQ(loop.error_kind, ErrorKind::kRedirects);
  EXPECT_EQ(loop.error, "redirect loop for url (" + server.url() + "/loop): " + server.url() + "/loop -> " +
                            server.url() + "/loop");
  auto ping_pong = http::Request(server.url() + "/a");
  EXPECT_EQ(ping_pong.error_kind, ErrorKind::kRedirects);
  EXPECT_NE(ping_pong.error.find("redirect loop for url (" + server.url() + "/a)"), std::string::npos) << ping_pong.error;
  EXPECT_FALSE(ping_pong.ok());

  auto chain = http::Request(server.url() + "/chain/0", {.max_redirects = 3});
  EXPECT_EQ(chain.error_kind, ErrorKind::kRedirects);
  EXPECT_EQ(chain.error, "too many redirects for url (" + server.url() + "/chain/0): more than 3, last to " +
                             server.url() + "/chain/4");
  EXPECT_EQ(server.seen().back().target, "/chain/3");  // the fourth redirect was not followed
  auto three = http::Request(server.url() + "/chain/7", {.max_redirects = 3});
  EXPECT_EQ(three.error_kind, ErrorKind::kRedirects);  // the default of 5 would pass, 3 does not

  auto file = http::Request(server.url() + "/file");
  EXPECT_EQ(file.error_kind, ErrorKind::kRedirects);
  EXPECT_NE(file.error.find("non-HTTP url (file:///etc/passwd)"), std::string::npos) << file.error;
}

TEST(HttpClientTest, BodiesOverTheirLimitFailNamingUrlAndLimit) {
  const std::string big(100 * 1024, 'b');
  const std::string compressed = http_server::GzipCompress(big);
  ASSERT_LT(compressed.size(), 1000u);
  RecordingServer server([&](const http_server::Request& r) {
    if (r.path == "/redirect") return Redirect(302, "/big");
    http_server::Response out = http_server::Response::Text(200, r.path == "/gzip" ? compressed : big);
    if (r.path == "/gzip") out.headers["Content-Encoding"] = "gzip";
    return out;
  });
  auto r = http::Request(server.url() + "/redirect", {.max_body_bytes = 1000, .max_body_name = "the test limit"});
  EXPECT_EQ(r.error_kind, ErrorKind::kBodyTooLarge);
  EXPECT_EQ(r.error, "response body of url (" + server.url() + "/big) exceeds 1000 bytes (the test limit)");
  EXPECT_FALSE(r.ok());
  auto exact = http::Request(server.url() + "/big", {.max_body_bytes = big.size()});
  ASSERT_TRUE(exact.ok()) << exact.error;
  EXPECT_EQ(exact.body.size(), big.size());
  // Decoded size counts: a gzip body small on the wire is still refused.
  auto gzip = http::Get(server.url() + "/gzip", {.accept_gzip = true, .max_body_bytes = 1000});
  EXPECT_EQ(gzip.error_kind, ErrorKind::kBodyTooLarge);
}

TEST(HttpClientTest, ConnectionsAreReusedPerThread) {
  RecordingServer server([](const http_server::Request&) { return http_server::Response::Text(200, "ok"); });
  auto first = http::Request(server.url() + "/1");
  ASSERT_TRUE(first.ok()) << first.error;
  auto second = http::Request(server.url() + "/2");
  ASSERT_TRUE(second.ok()) << second.error;
  EXPECT_EQ(second.new_connections, 0);  // the first request's connection
  long other_thread = std::async(std::launch::async, [&] { return http::Request(server.url() + "/3").new_connections; }).get();
  EXPECT_EQ(other_thread, 1);  // a thread's handle is its own
  // A redirect to the same origin reuses the connection as well.
  RecordingServer redirecting([](const http_server::Request& r) {
    return r.path == "/r" ? Redirect(302, "/ok") : http_server::Response::Text(200, "ok");
  });
  auto hop = http::Request(redirecting.url() + "/r");
  ASSERT_TRUE(hop.ok()) << hop.error;
  EXPECT_EQ(hop.new_connections, 1);
}

// A server that never answers until released; a stopped request gives up in time.
TEST(HttpClientTest, StopCancelsARequestInFlight) {
  std::mutex mu;
  std::condition_variable released_cv;
  bool released = false;
  std::promise<void> arrived;
  std::atomic<bool> signalled{false};
  http_server::HttpServer server(http_server::ServerLimits{.threads = 1});
  std::vector<std::thread> answers;
  int port = server
                 .ListenAsync("127.0.0.1", 0,
                              [&](const http_server::Request&, std::function<void(http_server::Response)> done) {
                                answers.emplace_back([&, done] {
                                  std::unique_lock<std::mutex> lock(mu);
                                  released_cv.wait_for(lock, std::chrono::seconds(60), [&] { return released; });
                                  done(http_server::Response::Text(200, "late"));
                                });
                                // After the emplace: the test reads `answers` later.
                                if (!signalled.exchange(true)) arrived.set_value();
                              })
                 .value();
  server.Start();
  std::stop_source stop;
  auto start = std::chrono::steady_clock::now();
  std::thread stopper([&] {  // once the request is in flight
    arrived.get_future().wait_for(std::chrono::seconds(30));
    stop.request_stop();
  });
  auto r = http::Request("http://127.0.0.1:" + std::to_string(port) + "/slow",
                         {.timeout = std::chrono::seconds(60), .stop = stop.get_token()});
  auto took = std::chrono::steady_clock::now() - start;
  stopper.join();
  EXPECT_EQ(r.error_kind, ErrorKind::kCancelled);
  EXPECT_NE(r.error.find("/slow) cancelled"), std::string::npos) << r.error;
  EXPECT_LT(took, std::chrono::seconds(10));  // far below the server's 60 s: the stop ended it
  auto again = http::Request("http://127.0.0.1:" + std::to_string(port) + "/x", {.stop = stop.get_token()});
  EXPECT_EQ(again.error_kind, ErrorKind::kCancelled);  // already stopped: not even sent

  {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
  }
  released_cv.notify_all();
  for (std::thread& t : answers) t.join();
  server.Shutdown(std::chrono::seconds(2));
}

TEST(HttpClientTest, SameOriginComparesSchemeHostAndPort) {
  EXPECT_TRUE(http::SameOrigin("https://quay.io/v2/x", "https://QUAY.io:443/other"));
  EXPECT_FALSE(http::SameOrigin("https://quay.io/v2/x", "http://quay.io/v2/x"));
  EXPECT_FALSE(http::SameOrigin("https://quay.io/v2/x", "https://quay.io:8443/v2/x"));
  EXPECT_FALSE(http::SameOrigin("https://quay.io/v2/x", "https://cdn.quay.io/v2/x"));
  EXPECT_FALSE(http::SameOrigin("http://127.0.0.1:5000/", "http://localhost:5000/"));
  EXPECT_FALSE(http::SameOrigin("not a url", "not a url"));
}

}  // namespace
}  // namespace cincinnati
