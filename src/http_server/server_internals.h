// The HTTP server's parts, shared by its two files: the server (http_server.cc: loops,
// listeners, shutdown) and one connection (server_session.cc). Not for other modules.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include "env/clock.h"
#include "env/cpus.h"
#include "http_server/http_server.h"

namespace cincinnati::http_server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

class Session;

// Sockets never leak into processes this one starts (hooks, a hand-over's new agent):
// a listener inherited by a child keeps the port bound after this process is gone.
void SetCloseOnExec(int fd);

// How long a shutdown waits for the first request of a connection it accepted (sent, as
// a rule, before the accept), and for the client of a half-closed connection to close
// its end (a request that crossed the FIN arrives within a round trip). Both bound how
// long idle clients can hold a shutdown, and with it a hand-over.
inline constexpr std::chrono::milliseconds kFirstRequestOnShutdown{500};
inline constexpr std::chrono::milliseconds kLingerOnShutdown{250};

// The sessions of one loop, and the sweep that closes those past their deadline: one
// timer per loop instead of a timer operation per request.
struct LoopSessions {
  explicit LoopSessions(asio::io_context& loop) : timer(loop) {}
  asio::steady_timer timer;
  std::vector<std::weak_ptr<Session>> sessions;  // touched on the loop's thread only
};

// One event loop per thread, as nginx runs one per worker: a connection lives on one
// loop, so its handlers never cross threads and need no strand or lock. Accepted
// connections are spread over the loops round-robin.
struct HttpServer::Impl {
  ServerLimits limits;
  std::vector<std::unique_ptr<asio::io_context>> loops;
  std::vector<std::unique_ptr<LoopSessions>> loop_sessions;  // one per loop
  std::atomic<size_t> next_loop{0};
  // Keep run() going while a request waits on an asynchronous handler and nothing
  // else is pending (after shutdown closed the acceptors).
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  // An accept is started, and the acceptors are closed or released, under this lock:
  // an accept completing on one loop's thread re-arms while another thread stops them.
  std::mutex accept_mu;
  bool accepting = true;  // guarded by accept_mu
  std::vector<std::thread> threads;
  std::atomic<bool> stopping{false};
  std::atomic<size_t> connections{0};
  std::mutex sessions_mu;
  std::set<std::weak_ptr<Session>, std::owner_less<std::weak_ptr<Session>>> sessions;
  bool started = false;
  // SIGTERM and SIGINT, once caught (CatchSignals), until WaitForSignal.
  std::unique_ptr<asio::io_context> signals_ioc;
  std::unique_ptr<asio::signal_set> signals;
  std::function<Response(int status, std::string_view message)> error_response;  // set before Start

  explicit Impl(ServerLimits l) : limits(l) {
    for (size_t i = 0; i < Threads(); ++i) {
      loops.push_back(std::make_unique<asio::io_context>(1));
      loop_sessions.push_back(std::make_unique<LoopSessions>(*loops.back()));
    }
  }
  size_t Threads() const {
    return limits.threads ? limits.threads : env::UsableCpus();
  }
  // How often a loop looks for sessions past their deadline: a quarter of the
  // shortest timeout, within [10 ms, 250 ms]; during a shutdown a tenth of the linger,
  // so that lingering connections end on time.
  std::chrono::milliseconds SweepPeriod() const {
    if (stopping) return kLingerOnShutdown / 10;
    auto shortest = limits.first_request_timeout;
    if (limits.keep_alive_timeout.count() > 0) shortest = std::min(shortest, limits.keep_alive_timeout);
    return std::clamp<std::chrono::milliseconds>(shortest / 4, std::chrono::milliseconds(10),
                                                 std::chrono::milliseconds(250));
  }
  void Accept(tcp::acceptor& acceptor, std::shared_ptr<AsyncHandler> handler);
  // Ends accepting: each acceptor's socket is released (to `released`) or, without
  // one, closed.
  void StopAccepting(std::vector<ListeningSocket>* released);
  void Sweep(size_t loop);
};

// One connection: its requests, read, answered and timed out on its loop's thread.
class Session : public std::enable_shared_from_this<Session> {
 public:
  // Deadlines on the real clock: the sockets and the sweep's timer run in real time.
  using Clock = std::chrono::steady_clock;
  static Clock::time_point Now() { return env::RealClock().Steady(); }

  Session(tcp::socket socket, HttpServer::Impl& server, LoopSessions& loop, std::shared_ptr<AsyncHandler> handler)
      : socket_(std::move(socket)),
        server_(server),
        loop_(loop),
        handler_(std::move(handler)),
        // Room for a whole request at the limits, so the parser's limits (431/413), not
        // the buffer's, decide; pipelined requests beyond it wait in the socket.
        buffer_(server.limits.max_head_bytes + server.limits.max_body_bytes + 1024) {
    beast::error_code ec;
    socket_.non_blocking(true, ec);  // answers are first written without waiting
  }
  ~Session() { server_.connections.fetch_sub(1); }

  void Start();

  // Called on shutdown. A busy connection closes after its answer (Write, Read); an
  // idle one ends as the header says.
  void EndOnShutdown();

  // Called by the loop's sweep, on the session's thread.
  void CloseIfPast(Clock::time_point now);

 private:
  void Read();

  void OnRead(beast::error_code ec);

  // The head and the body in one writev when the socket takes them (the common case);
  // the rest asynchronously when it does not.
  void Write(Response res);

  void Written(bool keep_alive);

  // The head with MSG_MORE (it leaves with the body's first segment, as nginx's
  // tcp_nopush does), then the body with sendfile(2).
  void WriteFile(bool keep_alive);

  // The body with sendfile(2), waiting for the socket to drain whenever it is full.
  void SendFile(off_t offset, bool keep_alive);

  void Fail(int status, const char* text);

  bool NextRequestHasCome();

  // Ends the connection in order on shutdown: FIN now, the close once the client closes
  // its end (the pending read sees it) or kLingerOnShutdown passes (the sweep).
  void HalfClose();

  void Close();

  tcp::socket socket_;
  HttpServer::Impl& server_;
  LoopSessions& loop_;
  std::shared_ptr<AsyncHandler> handler_;
  Request request_;  // outlives an asynchronous handler
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string head_;                         // the response head being sent
  std::shared_ptr<const std::string> body_;  // the body being sent
  std::shared_ptr<const std::string> body_tail_;  // and the rest of it
  std::shared_ptr<const FileBody> file_;     // the body being sent with sendfile
  Clock::time_point deadline_ = Clock::time_point::max();
  size_t requests_ = 0;
  unsigned version_ = 11;
  bool keep_alive_ = false;
  bool head_request_ = false;
  bool busy_ = false;
  bool half_closed_ = false;
  bool closed_ = false;
};

}  // namespace cincinnati::http_server
