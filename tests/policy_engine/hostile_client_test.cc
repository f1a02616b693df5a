// Hostile clients against a real `cincinnati serve` over loopback: oversized request
// lines and headers, thousands of idle connections, a slow-loris header trickle,
// pipelined requests, bad percent-encoding and non-UTF-8 parameters. Each gets a
// bounded, correct answer or a closed connection, and the service keeps serving others.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <thread>

#include "core/error_document.h"
#include "core/graph_json.h"
#include "core/strings.h"
#include "service_util.h"

namespace cincinnati {
namespace {

using testing::Get;
using testing::ServiceProcess;

// A raw TCP connection whose reads give up after `timeout` (every loop is bounded).
class RawConnection {
 public:
  explicit RawConnection(int port, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawConnection() {
    if (fd_ >= 0) close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }
  // False once the peer has closed (EPIPE/ECONNRESET).
  bool Send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Everything until the peer closes or the read timeout passes.
  std::string ReadUntilClose() {
    std::string out;
    char buf[65536];
    while (true) {
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = n == 0 || errno == ECONNRESET;
        return out;
      }
      out.append(buf, static_cast<size_t>(n));
    }
  }
  // Reads until `count` complete responses (head + Content-Length body) have arrived.
  std::vector<std::pair<std::string, std::string>> ReadResponses(size_t count) {
    std::vector<std::pair<std::string, std::string>> out;
    std::string data;
    char buf[65536];
    while (out.size() < count) {
      size_t head_end = data.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        std::string head = data.substr(0, head_end);
        size_t cl = head.find("Content-Length: ");
        size_t length = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 16));
        if (data.size() >= head_end + 4 + length) {
          out.emplace_back(head, data.substr(head_end + 4, length));
          data.erase(0, head_end + 4 + length);
          continue;
        }
      }
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      data.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  bool closed() const { return closed_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
};

std::string Request(const std::string& target, const std::string& extra_headers = "") {
  return "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n" + extra_headers + "\r\n";
}

int StatusOf(const std::string& response) {
  return response.size() > 12 && response.starts_with("HTTP/1.1 ") ? std::stoi(response.substr(9, 3)) : 0;
}

std::vector<std::string> Versions(const std::string& body) {
  std::vector<std::string> out;
  if (auto g = ReadGraphJson(body); g.ok()) {
    for (const Node& n : g->nodes()) out.push_back(n.version);
  }
  return out;
}

class HostileClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto example = testing::Examples() / "ocp-4x";
    serve_ = new ServiceProcess("serve", {"--releases", (example / "releases").string(), "--graph-data",
                                          (example / "graph-data").string(), "--service.client_timeout", "1",
                                          "--service.keep_alive", "2"});
    ASSERT_TRUE(testing::WaitFor([] { return Get(serve_->url("/readyz", "status")).status == 200; }))
        << serve_->log();
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(serve_->Stop(), 0) << serve_->log();
    delete serve_;
    serve_ = nullptr;
  }
  static int port() { return serve_->port("main"); }
  // The service still answers an ordinary client, correctly.
  static void ExpectStillServing() {
    auto r = Get(serve_->url("/api/upgrades_info/graph?channel=stable-4.12"));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(Versions(r.body), (std::vector<std::string>{"4.12.0", "4.12.1", "4.12.2", "4.12.3", "4.12.4"}));
  }
  static ServiceProcess* serve_;
};
ServiceProcess* HostileClientTest::serve_ = nullptr;

TEST_F(HostileClientTest, OversizedRequestLinesHeadersAndBodiesAreRefused) {
  {
    RawConnection c(port());
    ASSERT_TRUE(c.connected());
    c.Send(Request("/api/upgrades_info/graph?channel=" + std::string(64 * 1024, 'a')));
    EXPECT_EQ(StatusOf(c.ReadUntilClose()), 431);
  }
  {
    RawConnection c(port());
    std::string headers;
    for (int i = 0; i < 200; ++i) headers += "X-Padding-" + std::to_string(i) + ": " + std::string(200, 'p') + "\r\n";
    c.Send(Request("/api/upgrades_info/graph?channel=stable-4.12", headers));
    EXPECT_EQ(StatusOf(c.ReadUntilClose()), 431);
  }
  {
    // One endless header line: refused once past the limit, not read forever.
    RawConnection c(port());
    c.Send("GET /api/upgrades_info/graph?channel=stable-4.12 HTTP/1.1\r\nX-Endless: ");
    bool refused = false;
    for (int i = 0; i < 64 && !refused; ++i) refused = !c.Send(std::string(4096, 'x'));
    std::string answer = c.ReadUntilClose();
    EXPECT_TRUE(refused || StatusOf(answer) == 431) << answer.substr(0, 100);
  }
  {
    RawConnection c(port());
    c.Send(Request("/api/upgrades_info/graph?channel=stable-4.12", "Content-Length: 10485760\r\n"));
    c.Send(std::string(64 * 1024, 'b'));
    EXPECT_EQ(StatusOf(c.ReadUntilClose()), 413);
  }
  {
    // Not HTTP at all (a TLS ClientHello).
    RawConnection c(port());
    c.Send(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) + std::string(200, '\x00'));
    std::string answer = c.ReadUntilClose();
    EXPECT_TRUE(c.closed());
    EXPECT_TRUE(answer.empty() || StatusOf(answer) == 400) << answer;
  }
  ExpectStillServing();
}

TEST_F(HostileClientTest, ThousandsOfIdleConnectionsDoNotStarveOthersAndAreClosed) {
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 2000; ++i) {
    idle.push_back(std::make_unique<RawConnection>(port()));
    ASSERT_TRUE(idle.back()->connected()) << i;
  }
  ExpectStillServing();
  // The server closes each one after the 1 s client timeout: every read ends with EOF
  // (a read that times out after 5 s instead leaves closed() false).
  size_t closed = 0;
  for (auto& c : idle) {
    c->ReadUntilClose();
    closed += c->closed();
  }
  EXPECT_EQ(closed, idle.size());
  ExpectStillServing();
}

TEST_F(HostileClientTest, SlowLorisHeaderTrickleIsCutOffAtTheClientTimeout) {
  RawConnection c(port());
  ASSERT_TRUE(c.Send("GET /api/upgrades_info/graph?channel=stable-4.12 HTTP/1.1\r\nHost: x\r\n"));
  // One byte every 100 ms for up to 6 s; the server allows 1 s for the whole head.
  std::string trickle = "X-Slow: " + std::string(60, 's');
  size_t sent = 0;
  for (; sent < trickle.size(); ++sent) {
    if (!c.Send(trickle.substr(sent, 1))) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (sent == 5) ExpectStillServing();  // others are served meanwhile
  }
  std::string answer = c.ReadUntilClose();
  EXPECT_TRUE(c.closed());
  EXPECT_TRUE(answer.empty()) << answer;
  EXPECT_LT(sent, trickle.size()) << "the trickle was never cut off";
  ExpectStillServing();
}

TEST_F(HostileClientTest, PipelinedRequestsAreAnsweredInOrder) {
  RawConnection c(port());
  std::string burst = Request("/api/upgrades_info/graph?channel=stable-4.12") +
                      Request("/api/upgrades_info/graph?channel=Not_A_Channel") +
                      Request("/api/upgrades_info/graph?channel=candidate-4.13&arch=amd64") +
                      Request("/api/upgrades_info/graph?channel=stable-4.12", "Connection: close\r\n");
  ASSERT_TRUE(c.Send(burst));
  auto responses = c.ReadResponses(4);
  ASSERT_EQ(responses.size(), 4u);
  EXPECT_EQ(StatusOf(responses[0].first), 200);
  EXPECT_EQ(Versions(responses[0].second).front(), "4.12.0");
  EXPECT_EQ(StatusOf(responses[1].first), 400);
  EXPECT_EQ(ErrorDocument::Parse(responses[1].second)->kind, "invalid_params");
  EXPECT_EQ(StatusOf(responses[2].first), 200);
  EXPECT_EQ(Versions(responses[2].second).back().substr(0, 4), "4.13");
  EXPECT_EQ(responses[3].second, responses[0].second);
  EXPECT_NE(responses[3].first.find("Connection: close"), std::string::npos);
  c.ReadUntilClose();
  EXPECT_TRUE(c.closed());
}

TEST_F(HostileClientTest, BadPercentEncodingAndNonUtf8ParametersGetValidErrors) {
  struct Case {
    const char* query;
    const char* kind;
  };
  for (const Case& k : {Case{"channel=%zz", "invalid_params"}, Case{"channel=stable-4.12%", "invalid_params"},
                        Case{"channel=%ff%fe%C3%28", "invalid_params"}, Case{"channel=stable-4.12&arch=%80%80", "invalid_params"},
                        Case{"channel=%00", "invalid_params"}, Case{"%ff=1", "missing_params"}}) {
    auto r = Get(serve_->url(std::string("/api/upgrades_info/graph?") + k.query));
    EXPECT_EQ(r.status, 400) << k.query;
    EXPECT_TRUE(IsValidUtf8(r.body)) << k.query << ": " << r.body;
    auto doc = ErrorDocument::Parse(r.body);
    ASSERT_TRUE(doc.ok()) << k.query << ": " << r.body;
    EXPECT_EQ(doc->kind, k.kind) << k.query << ": " << r.body;
  }
  // A non-UTF-8 channel is echoed with U+FFFD, never as raw bytes.
  auto r = Get(serve_->url("/api/upgrades_info/graph?channel=a%ffb"));
  EXPECT_NE(r.body.find("channel 'a\xEF\xBF\xBD" "b' does not match"), std::string::npos) << r.body;
  {
    // Raw bytes above 0x7F in the request target: refused by the HTTP parser.
    RawConnection c(port());
    c.Send(Request("/api/upgrades_info/graph?channel=\xff\xfe", "Connection: close\r\n"));
    std::string answer = c.ReadUntilClose();
    EXPECT_TRUE(answer.empty() || StatusOf(answer) == 400) << answer;
    EXPECT_TRUE(IsValidUtf8(answer.substr(answer.find("\r\n\r\n") + 4)));
  }
  ExpectStillServing();
}

}  // namespace
}  // namespace cincinnati
