// Listening sockets passed between servers: taken from LISTEN_FDS at start (systemd's
// socket activation, the agent's hand-over) only when they are this process's and really
// listening, and released by a server without closing them, so that connections that
// arrive meanwhile wait in the backlog and the next server answers them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include "http/client.h"
#include "http_server/http_server.h"
#include "http_server/listening_socket.h"

namespace cincinnati::http_server {
namespace {

// Moves a descriptor (taken over) to `target` (3, 4: where inherited listeners are),
// not close-on-exec as a starter leaves it, and puts back what the test process had
// there (if anything) at the end.
class AtDescriptor {
 public:
  AtDescriptor(int target, int fd) : target_(target) {
    if (fd != target) {
      saved_ = ::fcntl(target, F_DUPFD_CLOEXEC, 100);
      EXPECT_EQ(::dup2(fd, target), target);
      ::close(fd);
    }
    EXPECT_EQ(::fcntl(target, F_SETFD, 0), 0);
  }
  ~AtDescriptor() {
    if (saved_ >= 0) {
      ::dup2(saved_, target_);
      ::close(saved_);
    } else {
      ::close(target_);
    }
  }
  AtDescriptor(const AtDescriptor&) = delete;
  AtDescriptor& operator=(const AtDescriptor&) = delete;

 private:
  int target_;
  int saved_ = -1;
};

// A descriptor above the ones the tests place, so that placing one does not overwrite it.
int High(int fd) {
  const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 50);
  ::close(fd);
  return high;
}

void SetListenVariables(const std::string& fds, const std::string& pid) {
  ::setenv("LISTEN_FDS", fds.c_str(), 1);
  if (pid.empty()) {
    ::unsetenv("LISTEN_PID");
  } else {
    ::setenv("LISTEN_PID", pid.c_str(), 1);
  }
  ::setenv("LISTEN_FDNAMES", "api", 1);
}

bool ListenVariablesGone() {
  return !std::getenv("LISTEN_FDS") && !std::getenv("LISTEN_PID") && !std::getenv("LISTEN_FDNAMES");
}

// Waits until `count` connections wait in the accept queue of the listening socket `fd`
// (TCP_INFO's unacked is that queue's length for a listener), at most a minute.
bool QueuedConnections(int fd, unsigned count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    tcp_info info{};
    socklen_t size = sizeof(info);
    if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &size) == 0 && info.tcpi_unacked >= count) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
}

bool CloseOnExec(int fd) { return (::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0; }

http::Result GetAt(uint16_t port, const std::string& path) {
  return http::Get("http://127.0.0.1:" + std::to_string(port) + path, {.timeout = std::chrono::seconds(60)});
}

TEST(ListeningSocketTest, AListenerOfThisProcessIsTakenAndServed) {
  auto bound = BindListeningSocket("127.0.0.1", 0, 16);
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  const uint16_t port = PortOf(*bound);
  ASSERT_GT(port, 0);
  AtDescriptor at_three(3, bound->release());
  SetListenVariables("1", std::to_string(::getpid()));

  auto taken = TakeInheritedListeners();
  ASSERT_TRUE(taken.ok()) << taken.status().message();
  ASSERT_EQ(taken->size(), 1u);
  EXPECT_EQ((*taken)[0].fd(), 3);
  EXPECT_TRUE(CloseOnExec(3)) << "an adopted listener must not leak into the processes this one starts";
  EXPECT_TRUE(ListenVariablesGone());

  HttpServer server;
  auto served = server.ListenOn(std::move((*taken)[0]), [](const Request&) { return Response::Text(200, "adopted"); });
  ASSERT_TRUE(served.ok()) << served.status().message();
  EXPECT_EQ(*served, port);
  server.Start();
  const http::Result got = GetAt(port, "/");
  EXPECT_EQ(got.status, 200) << got.error;
  EXPECT_EQ(got.body, "adopted");
  server.Shutdown();
}

TEST(ListeningSocketTest, ListenFdsOfAnotherProcessAreRefusedAndLeftAlone) {
  auto bound = BindListeningSocket("127.0.0.1", 0, 16);
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  AtDescriptor at_three(3, bound->release());
  SetListenVariables("1", std::to_string(::getppid()));

  auto taken = TakeInheritedListeners();
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.status().message().find("is for another process"), std::string::npos) << taken.status().message();
  EXPECT_TRUE(ListenVariablesGone()) << "passed on to nobody";
  EXPECT_GE(::fcntl(3, F_GETFD), 0) << "not this process's to close";
  EXPECT_FALSE(CloseOnExec(3)) << "not this process's to change";

  SetListenVariables("1", "");
  taken = TakeInheritedListeners();
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.status().message().find("without LISTEN_PID"), std::string::npos) << taken.status().message();
  EXPECT_TRUE(ListenVariablesGone());

  SetListenVariables("many", std::to_string(::getpid()));
  taken = TakeInheritedListeners();
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.status().message().find("is not a number"), std::string::npos) << taken.status().message();

  ::unsetenv("LISTEN_FDS");
  ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
  taken = TakeInheritedListeners();
  ASSERT_TRUE(taken.ok()) << "no LISTEN_FDS: nothing given, nothing wrong";
  EXPECT_TRUE(taken->empty());
  EXPECT_TRUE(ListenVariablesGone());
}

TEST(ListeningSocketTest, ADescriptorThatIsNotAListeningTcpSocketIsRefused) {
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  const int unbound = ::socket(AF_INET, SOCK_STREAM, 0);
  const int datagram = ::socket(AF_INET, SOCK_DGRAM, 0);
  const int local = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(unbound, 0);
  const struct {
    int fd;
    const char* why;
  } cases[] = {{pipe_ends[0], "is not a socket"},
               {unbound, "is not listening"},
               {datagram, "is not a stream socket"},
               {local, "is not a TCP socket"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.why);
    AtDescriptor at_three(3, ::fcntl(c.fd, F_DUPFD_CLOEXEC, 0));
    SetListenVariables("1", std::to_string(::getpid()));
    auto taken = TakeInheritedListeners();
    ASSERT_FALSE(taken.ok());
    EXPECT_NE(taken.status().message().find(std::string("descriptor 3 ") + c.why), std::string::npos)
        << taken.status().message();
    EXPECT_NE(taken.status().message().find("none is taken"), std::string::npos) << taken.status().message();
    EXPECT_GE(::fcntl(3, F_GETFD), 0) << "refused, not closed";
    EXPECT_TRUE(ListenVariablesGone());
  }
  for (int fd : {pipe_ends[0], pipe_ends[1], unbound, datagram, local}) ::close(fd);
}

// One bad descriptor refuses the lot; the good listener among them is closed, so that
// the port it held is free for the caller to bind.
TEST(ListeningSocketTest, AListenerRefusedWithABadNeighbourIsClosedAndItsPortFreed) {
  auto bound = BindListeningSocket("127.0.0.1", 0, 16);
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  const uint16_t port = PortOf(*bound);
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  const int listener = High(bound->release()), not_a_socket = High(pipe_ends[0]);
  AtDescriptor at_three(3, listener);
  AtDescriptor at_four(4, not_a_socket);
  SetListenVariables("2", std::to_string(::getpid()));
  auto taken = TakeInheritedListeners();
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.status().message().find("LISTEN_FDS=2: descriptor 4 is not a socket; none is taken"), std::string::npos)
      << taken.status().message();
  EXPECT_LT(::fcntl(3, F_GETFD), 0) << "the listener is closed";
  EXPECT_GE(::fcntl(4, F_GETFD), 0) << "what is not a listener is left open";
  EXPECT_TRUE(BindListeningSocket("127.0.0.1", port, 16).ok()) << "the port is free";
  ::close(pipe_ends[1]);
}

// The in-process hand-over: the first server releases its listener (open, no longer
// accepting); a request sent meanwhile waits in the backlog and the second server,
// serving the same socket, answers it. No connection is refused in between.
TEST(ListeningSocketTest, ARequestSentWhileNoServerAcceptsIsAnsweredByTheNextOne) {
  HttpServer first;
  auto port = first.Listen("127.0.0.1", 0, [](const Request&) { return Response::Text(200, "first"); });
  ASSERT_TRUE(port.ok()) << port.status().message();
  first.Start();
  EXPECT_EQ(GetAt(*port, "/").body, "first");

  std::vector<ListeningSocket> released = first.ReleaseListeners();
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(PortOf(released[0]), *port);
  EXPECT_TRUE(CloseOnExec(released[0].fd()));
  EXPECT_TRUE(first.ReleaseListeners().empty()) << "released once";
  first.Shutdown();  // does not close what it released

  // Sent with no server accepting: the kernel completes the connection, which waits in
  // the accept queue until the next server takes the socket.
  auto waiting = std::async(std::launch::async, [&] { return GetAt(*port, "/"); });
  ASSERT_TRUE(QueuedConnections(released[0].fd(), 1)) << "the connection never reached the backlog";

  HttpServer second;
  auto served = second.ListenOn(std::move(released[0]), [](const Request&) { return Response::Text(200, "second"); });
  ASSERT_TRUE(served.ok()) << served.status().message();
  EXPECT_EQ(*served, *port);
  second.Start();
  const http::Result got = waiting.get();
  EXPECT_EQ(got.status, 200) << got.error;
  EXPECT_EQ(got.body, "second");
  second.Shutdown();
}

// A raw client connection to 127.0.0.1:port, with a minute's cap on each read.
int Connect(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  const timeval cap{60, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &cap, sizeof(cap));
  return fd;
}

void SendRequest(int fd, const std::string& path) {
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: test\r\n\r\n";
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
}

// What arrives until `done` says it is whole, or the end of the stream (or an error).
std::string Receive(int fd, const std::function<bool(const std::string&)>& done) {
  std::string got;
  char buffer[4096];
  while (!done(got)) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    got.append(buffer, static_cast<size_t>(n));
  }
  return got;
}

// A shutdown costs no client a request: an idle keep-alive connection gets an orderly
// end of stream (FIN, not a reset), and a connection accepted before the shutdown whose
// request comes after it began is answered, with Connection: close.
TEST(ListeningSocketTest, AShutdownEndsIdleConnectionsInOrderAndAnswersAFirstRequestOnItsWay) {
  HttpServer server({.threads = 2});
  auto port = server.Listen("127.0.0.1", 0, [](const Request& r) { return Response::Text(200, "path " + r.path); });
  ASSERT_TRUE(port.ok()) << port.status().message();
  server.Start();
  const int idle = Connect(*port);
  SendRequest(idle, "/first");
  const std::string first = Receive(idle, [](const std::string& got) { return got.find("path /first") != std::string::npos; });
  ASSERT_NE(first.find("path /first"), std::string::npos) << first;
  const int fresh = Connect(*port);
  const auto cap = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (server.open_connections() < 2 && std::chrono::steady_clock::now() < cap) std::this_thread::yield();
  ASSERT_EQ(server.open_connections(), 2u) << "the fresh connection was never accepted";

  auto stopped = std::async(std::launch::async, [&] { server.Shutdown(std::chrono::seconds(60)); });
  char byte;
  errno = 0;
  EXPECT_EQ(::recv(idle, &byte, 1, 0), 0) << "an orderly end of stream, not " << std::strerror(errno);
  // The shutdown has begun (the FIN says so): the fresh connection's request now.
  SendRequest(fresh, "/second");
  const std::string second = Receive(fresh, [](const std::string&) { return false; });
  EXPECT_EQ(second.rfind("HTTP/1.1 200", 0), 0u) << second;
  EXPECT_NE(second.find("Connection: close"), std::string::npos) << second;
  EXPECT_NE(second.find("path /second"), std::string::npos) << second;
  stopped.get();
  EXPECT_EQ(server.open_connections(), 0u);
  ::close(idle);
  ::close(fresh);
}

}  // namespace
}  // namespace cincinnati::http_server
