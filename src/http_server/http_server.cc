#include "http_server/http_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/sendfile.h>

#include <cerrno>
#include <csignal>
#include <mutex>
#include <set>
#include <algorithm>
#include <array>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "env/clock.h"
#include "http_server/response_head.h"

namespace cincinnati::http_server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

class Session;

// Sockets never leak into processes this one starts (hooks, a hand-over's new agent):
// a listener inherited by a child keeps the port bound after this process is gone.
void SetCloseOnExec(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

// The address to bind: "localhost" is the loopback address (boost's make_address takes
// numeric addresses only); an IPv6 address may come bracketed, as in a URL.
std::string BindAddress(const std::string& address) {
  if (address == "localhost") return "127.0.0.1";
  if (address.size() > 2 && address.front() == '[' && address.back() == ']') return address.substr(1, address.size() - 2);
  return address;
}

// The sessions of one loop, and the sweep that closes those past their deadline: one
// timer per loop instead of a timer operation per request.
struct LoopSessions {
  explicit LoopSessions(asio::io_context& loop) : timer(loop) {}
  asio::steady_timer timer;
  std::vector<std::weak_ptr<Session>> sessions;  // touched on the loop's thread only
};

}  // namespace

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
    return limits.threads ? limits.threads : std::max(1u, std::thread::hardware_concurrency());
  }
  // How often a loop looks for sessions past their deadline: a quarter of the
  // shortest timeout, within [10 ms, 250 ms].
  std::chrono::milliseconds SweepPeriod() const {
    auto shortest = limits.first_request_timeout;
    if (limits.keep_alive_timeout.count() > 0) shortest = std::min(shortest, limits.keep_alive_timeout);
    return std::clamp<std::chrono::milliseconds>(shortest / 4, std::chrono::milliseconds(10),
                                                 std::chrono::milliseconds(250));
  }
  void Accept(tcp::acceptor& acceptor, std::shared_ptr<AsyncHandler> handler);
  void Sweep(size_t loop);
};

namespace {

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

  void Start() {
    asio::dispatch(socket_.get_executor(), [self = shared_from_this()] {
      self->loop_.sessions.push_back(self);
      self->Read();
    });
  }

  // Called on shutdown: an idle connection is closed now, a busy one after its reply.
  void CloseIfIdle() {
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      if (!self->busy_) self->Close();
    });
  }

  // Called by the loop's sweep, on the session's thread.
  void CloseIfPast(Clock::time_point now) {
    if (!closed_ && now >= deadline_) Close();
  }

 private:
  void Read() {
    if (server_.stopping) return Close();
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(server_.limits.max_head_bytes));
    parser_->body_limit(server_.limits.max_body_bytes);
    deadline_ = Now() +
                (requests_ == 0 ? server_.limits.first_request_timeout : server_.limits.keep_alive_timeout);
    busy_ = false;
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (closed_) return;
    if (ec == http::error::header_limit || (ec == http::error::buffer_overflow && !parser_->is_header_done())) {
      return Fail(431, "request header fields too large");
    }
    if (ec == http::error::body_limit) return Fail(413, "payload too large");
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || ec == asio::error::eof) {
      return Close();
    }
    if (ec) return Fail(400, "bad request");
    busy_ = true;
    // The handler's own time is its own (an answer computed for a minute is still sent);
    // the write timeout starts when the answer is ready (Write).
    deadline_ = Clock::time_point::max();
    ++requests_;
    const auto& msg = parser_->get();
    Request& req = request_;
    req.method.assign(msg.method_string());
    req.target.assign(msg.target());
    size_t q = req.target.find('?');
    req.path.assign(req.target, 0, q);
    if (q != std::string::npos) {
      req.query.assign(req.target, q + 1);
    } else {
      req.query.clear();
    }
    req.headers.clear();
    for (const auto& field : msg) req.headers.emplace(std::string(field.name_string()), std::string(field.value()));
    req.body.assign(msg.body());
    keep_alive_ = msg.keep_alive() && server_.limits.keep_alive_timeout.count() > 0;
    head_request_ = msg.method() == http::verb::head;
    version_ = msg.version();
    // Only the session is captured: the responder fits std::function's inline storage.
    auto respond = [self = shared_from_this()](Response res) {
      // Inline when the handler answered on this connection's thread; queued otherwise.
      asio::dispatch(self->socket_.get_executor(),
                     [self, res = std::move(res)]() mutable { self->Write(std::move(res)); });
    };
    try {
      (*handler_)(req, respond);
    } catch (const std::exception& e) {
      spdlog::error("handler failed for {}: {}", req.target, e.what());
      respond(Response::Text(500, "internal error"));
    } catch (...) {
      spdlog::error("handler failed for {}", req.target);
      respond(Response::Text(500, "internal error"));
    }
  }

  // The head and the body in one writev when the socket takes them (the common case);
  // the rest asynchronously when it does not.
  void Write(Response res) {
    if (closed_) return;
    deadline_ = Now() + server_.limits.write_timeout;
    const bool keep_alive = keep_alive_ && !server_.stopping;
    const bool has_body = !head_request_ && res.status != 304 && res.status != 204;
    if (res.file && has_body && res.status == 200) {
      file_ = std::move(res.file);
      head_.clear();
      AppendResponseHead(head_, res, version_, file_->size(), keep_alive);
      return WriteFile(keep_alive);
    }
    body_ = std::move(res.body);
    body_tail_ = std::move(res.body_tail);
    const size_t length = (body_ ? body_->size() : 0) + (body_tail_ ? body_tail_->size() : 0);
    head_.clear();
    AppendResponseHead(head_, res, version_, length, keep_alive);
    std::array<asio::const_buffer, 3> buffers{asio::buffer(head_),
                                              has_body && body_ ? asio::buffer(*body_) : asio::const_buffer(),
                                              has_body && body_tail_ ? asio::buffer(*body_tail_) : asio::const_buffer()};
    const size_t total = buffers[0].size() + buffers[1].size() + buffers[2].size();
    beast::error_code ec;
    size_t sent = socket_.write_some(buffers, ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      sent = 0;
    } else if (ec) {
      return Close();
    }
    if (sent == total) return Written(keep_alive);
    for (asio::const_buffer& b : buffers) {  // skip what was sent
      const size_t n = std::min(sent, b.size());
      b += n;
      sent -= n;
    }
    asio::async_write(socket_, buffers, [self = shared_from_this(), keep_alive](beast::error_code e, size_t) {
      if (e) return self->Close();
      self->Written(keep_alive);
    });
  }

  void Written(bool keep_alive) {
    body_.reset();
    body_tail_.reset();
    if (!keep_alive) return Close();
    Read();
  }

  // The head with MSG_MORE (it leaves with the body's first segment, as nginx's
  // tcp_nopush does), then the body with sendfile(2).
  void WriteFile(bool keep_alive) {
    ssize_t n = ::send(socket_.native_handle(), head_.data(), head_.size(), MSG_MORE | MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n == static_cast<ssize_t>(head_.size())) return SendFile(0, keep_alive);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return Close();
    size_t done = n > 0 ? static_cast<size_t>(n) : 0;
    asio::async_write(socket_, asio::buffer(head_.data() + done, head_.size() - done),
                      [self = shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                        if (ec) return self->Close();
                        self->SendFile(0, keep_alive);
                      });
  }

  // The body with sendfile(2), waiting for the socket to drain whenever it is full.
  void SendFile(off_t offset, bool keep_alive) {
    if (closed_) return;
    const off_t size = static_cast<off_t>(file_->size());
    while (offset < size) {
      ssize_t n = ::sendfile(socket_.native_handle(), file_->fd(), &offset, static_cast<size_t>(size - offset));
      if (n > 0 || (n < 0 && errno == EINTR)) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        socket_.async_wait(tcp::socket::wait_write, [self = shared_from_this(), offset, keep_alive](beast::error_code e) {
          if (e) return self->Close();
          self->SendFile(offset, keep_alive);
        });
        return;
      }
      return Close();
    }
    file_.reset();
    if (!keep_alive) return Close();
    Read();
  }

  void Fail(int status, const char* text) {
    keep_alive_ = false;
    head_request_ = false;
    version_ = 11;
    Write(server_.error_response ? server_.error_response(status, text) : Response::Text(status, text));
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    socket_.close(ec);
  }

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
  bool closed_ = false;
};

}  // namespace

void HttpServer::Impl::Sweep(size_t loop) {
  LoopSessions& ls = *loop_sessions[loop];
  auto now = Session::Now();
  auto& list = ls.sessions;
  size_t kept = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    auto s = list[i].lock();
    if (!s) continue;
    s->CloseIfPast(now);
    if (kept != i) list[kept] = std::move(list[i]);  // never onto itself: that empties a weak_ptr
    ++kept;
  }
  list.resize(kept);
  ls.timer.expires_after(SweepPeriod());
  ls.timer.async_wait([this, loop](beast::error_code ec) {
    if (!ec) Sweep(loop);
  });
}

void HttpServer::Impl::Accept(tcp::acceptor& acceptor, std::shared_ptr<AsyncHandler> handler) {
  const size_t loop = next_loop.fetch_add(1) % loops.size();
  acceptor.async_accept(*loops[loop], [this, &acceptor, handler, loop](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted || stopping) return;
      spdlog::warn("accept failed: {}", ec.message());
    } else if (connections.load() >= limits.max_connections) {
      beast::error_code ignored;
      socket.close(ignored);  // over the cap: refuse by closing
    } else {
      connections.fetch_add(1);
      beast::error_code ignored;
      SetCloseOnExec(socket.native_handle());
      socket.set_option(tcp::no_delay(true), ignored);  // replies are whole messages; never wait for ACKs
      auto session = std::make_shared<Session>(std::move(socket), *this, *loop_sessions[loop], handler);
      {
        std::lock_guard<std::mutex> lock(sessions_mu);
        for (auto it = sessions.begin(); it != sessions.end();) it = it->expired() ? sessions.erase(it) : std::next(it);
        sessions.insert(session);
      }
      session->Start();
    }
    if (!stopping) Accept(acceptor, handler);
  });
}

HttpServer::HttpServer(ServerLimits limits) : impl_(std::make_unique<Impl>(limits)) {}

HttpServer::~HttpServer() { Shutdown(std::chrono::milliseconds(0)); }

Result<uint16_t> HttpServer::Listen(const std::string& address, uint16_t port, Handler handler) {
  return ListenAsync(address, port, [handler = std::move(handler)](const Request& r, std::function<void(Response)> done) {
    done(handler(r));
  });
}

Result<uint16_t> HttpServer::ListenAsync(const std::string& address, uint16_t port, AsyncHandler handler) {
  beast::error_code ec;
  auto ip = asio::ip::make_address(BindAddress(address), ec);
  if (ec) {
    return Status::InvalidArgument(
        fmt::format("invalid listen address '{}': {} (give an IP address, or localhost)", address, ec.message()));
  }
  auto acceptor = std::make_unique<tcp::acceptor>(*impl_->loops[0]);
  tcp::endpoint endpoint(ip, port);
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) SetCloseOnExec(acceptor->native_handle());
  if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(impl_->limits.backlog, ec);
  if (ec) return Status::IoError(fmt::format("cannot listen on {}:{}: {}", address, port, ec.message()));
  uint16_t bound = acceptor->local_endpoint().port();
  impl_->Accept(*acceptor, std::make_shared<AsyncHandler>(std::move(handler)));
  impl_->acceptors.push_back(std::move(acceptor));
  return bound;
}

void HttpServer::SetErrorResponse(std::function<Response(int status, std::string_view message)> respond) {
  impl_->error_response = std::move(respond);
}

void HttpServer::Start() {
  if (impl_->started) return;
  impl_->started = true;
  // sendfile(2) has no MSG_NOSIGNAL: a client that hangs up mid-body would otherwise
  // kill the process with SIGPIPE. The write fails with EPIPE and closes that session.
  std::signal(SIGPIPE, SIG_IGN);
  for (size_t i = 0; i < impl_->loops.size(); ++i) {
    asio::post(*impl_->loops[i], [this, i] { impl_->Sweep(i); });
  }
  for (auto& loop : impl_->loops) {
    impl_->work.push_back(asio::make_work_guard(*loop));
    impl_->threads.emplace_back([&loop] {
      // An exception out of a completion handler (bad_alloc, say) drops that one
      // operation; the loop, and every other connection on it, goes on.
      for (;;) {
        try {
          loop->run();
          return;
        } catch (const std::exception& e) {
          spdlog::error("http server: an I/O handler failed: {}", e.what());
        } catch (...) {
          spdlog::error("http server: an I/O handler failed");
        }
      }
    });
  }
}

void HttpServer::CatchSignals() {
  if (impl_->signals) return;
  impl_->signals_ioc = std::make_unique<asio::io_context>(1);
  impl_->signals = std::make_unique<asio::signal_set>(*impl_->signals_ioc, SIGINT, SIGTERM);
}

void HttpServer::WaitForSignal(std::chrono::milliseconds grace, std::function<void()> before_shutdown) {
  CatchSignals();
  impl_->signals->async_wait([](beast::error_code, int signal) { spdlog::info("signal {} received, shutting down", signal); });
  impl_->signals_ioc->run();
  if (before_shutdown) before_shutdown();
  Shutdown(grace);
}

void HttpServer::Shutdown(std::chrono::milliseconds grace) {
  if (impl_->stopping.exchange(true)) {
    for (auto& t : impl_->threads) {
      if (t.joinable()) t.join();
    }
    return;
  }
  asio::post(*impl_->loops[0], [this] {
    for (auto& a : impl_->acceptors) {
      beast::error_code ec;
      a->close(ec);
    }
  });
  {
    std::lock_guard<std::mutex> lock(impl_->sessions_mu);
    for (const auto& weak : impl_->sessions) {
      if (auto s = weak.lock()) s->CloseIfIdle();
    }
  }
  auto deadline = env::RealClock().Steady() + grace;
  while (impl_->connections.load() > 0 && env::RealClock().Steady() < deadline && impl_->started) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  impl_->work.clear();
  for (auto& loop : impl_->loops) loop->stop();
  for (auto& t : impl_->threads) {
    if (t.joinable()) t.join();
  }
  // The close posted above may not have run before the loops stopped: the port must
  // be free when Shutdown returns (a hand-over's new agent binds it next).
  for (auto& a : impl_->acceptors) {
    beast::error_code ec;
    a->close(ec);
  }
}

size_t HttpServer::open_connections() const { return impl_->connections.load(); }

}  // namespace cincinnati::http_server
