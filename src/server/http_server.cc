#include "server/http_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/sendfile.h>

#include <cerrno>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace cincinnati::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

class Session;

}  // namespace

// One event loop per thread, as nginx runs one per worker: a connection lives on one
// loop, so its handlers never cross threads and need no strand or lock. Accepted
// connections are spread over the loops round-robin.
struct HttpServer::Impl {
  ServerLimits limits;
  std::vector<std::unique_ptr<asio::io_context>> loops;
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

  explicit Impl(ServerLimits l) : limits(l) {
    for (size_t i = 0; i < Threads(); ++i) loops.push_back(std::make_unique<asio::io_context>(1));
  }
  asio::io_context& NextLoop() { return *loops[next_loop.fetch_add(1) % loops.size()]; }
  size_t Threads() const {
    return limits.threads ? limits.threads : std::max(1u, std::thread::hardware_concurrency());
  }
  void Accept(tcp::acceptor& acceptor, std::shared_ptr<AsyncHandler> handler);
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer::Impl& server, std::shared_ptr<AsyncHandler> handler)
      : stream_(std::move(socket)),
        server_(server),
        handler_(std::move(handler)),
        // Room for a whole request at the limits, so the parser's limits (431/413), not
        // the buffer's, decide; pipelined requests beyond it wait in the socket.
        buffer_(server.limits.max_head_bytes + server.limits.max_body_bytes + 1024) {}
  ~Session() { server_.connections.fetch_sub(1); }

  void Start() { asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Read(); }); }

  // Called on shutdown: an idle connection is closed now, a busy one after its reply.
  void CloseIfIdle() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->busy_) {
        beast::error_code ec;
        self->stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
        self->stream_.cancel();
      }
    });
  }

 private:
  void Read() {
    if (server_.stopping) return Close();
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(server_.limits.max_head_bytes));
    parser_->body_limit(server_.limits.max_body_bytes);
    stream_.expires_after(requests_ == 0 ? server_.limits.first_request_timeout : server_.limits.keep_alive_timeout);
    busy_ = false;
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::header_limit || (ec == http::error::buffer_overflow && !parser_->is_header_done())) {
      return Fail(431, "request header fields too large");
    }
    if (ec == http::error::body_limit) return Fail(413, "payload too large");
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || ec == asio::error::eof) {
      return Close();
    }
    if (ec) return Fail(400, "bad request");
    busy_ = true;
    ++requests_;
    const auto& msg = parser_->get();
    Request& req = request_;
    req = Request();
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    size_t q = req.target.find('?');
    req.path = req.target.substr(0, q);
    if (q != std::string::npos) req.query = req.target.substr(q + 1);
    for (const auto& field : msg) req.headers.emplace(std::string(field.name_string()), std::string(field.value()));
    bool keep_alive = msg.keep_alive() && server_.limits.keep_alive_timeout.count() > 0;
    bool head = msg.method() == http::verb::head;

    unsigned version = msg.version();
    auto respond = [self = shared_from_this(), keep_alive, head, version](Response res) {
      // Inline when the handler answered on this connection's thread; queued otherwise.
      asio::dispatch(self->stream_.get_executor(), [self, res = std::move(res), keep_alive, head, version]() mutable {
        self->Write(std::move(res), keep_alive && !self->server_.stopping, head, version);
      });
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

  void Write(Response res, bool keep_alive, bool head, unsigned version) {
    if (res.file && !head && res.status == 200) return WriteFile(std::move(res), keep_alive, version);
    body_ = res.body ? std::move(res.body) : std::make_shared<const std::string>();
    response_.emplace();
    response_->version(version);
    response_->result(static_cast<unsigned>(res.status));
    for (const auto& [k, v] : res.headers) response_->set(k, v);
    response_->keep_alive(keep_alive);
    response_->content_length(body_->size());
    if (!head && res.status != 304 && res.status != 204) {
      response_->body() = http::span_body<const char>::value_type(body_->data(), body_->size());
    }
    http::async_write(stream_, *response_,
                      [self = shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                        if (ec || !keep_alive) return self->Close();
                        self->Read();
                      });
  }

  // Header through Beast, then the body with sendfile(2) from the response's file,
  // waiting for the socket to drain whenever it is full. A timer bounds the whole.
  void WriteFile(Response res, bool keep_alive, unsigned version) {
    file_ = std::move(res.file);
    header_.emplace();
    header_->version(version);
    header_->result(static_cast<unsigned>(res.status));
    for (const auto& [k, v] : res.headers) header_->set(k, v);
    header_->keep_alive(keep_alive);
    header_->content_length(file_->size());
    header_serializer_.emplace(*header_);
    Cork(true);  // header and body leave in full segments, as nginx's tcp_nopush
    write_timer_.expires_after(std::chrono::seconds(60));
    write_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->Close();  // the client stopped reading
    });
    http::async_write_header(stream_, *header_serializer_,
                             [self = shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                               if (ec) return self->Close();
                               self->SendFile(0, keep_alive);
                             });
  }

  void SendFile(off_t offset, bool keep_alive) {
    tcp::socket& socket = stream_.socket();
    beast::error_code ec;
    socket.native_non_blocking(true, ec);
    const off_t size = static_cast<off_t>(file_->size());
    while (offset < size) {
      ssize_t n = ::sendfile(socket.native_handle(), file_->fd(), &offset, static_cast<size_t>(size - offset));
      if (n > 0 || (n < 0 && errno == EINTR)) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        socket.async_wait(tcp::socket::wait_write, [self = shared_from_this(), offset, keep_alive](beast::error_code e) {
          if (e) return self->Close();
          self->SendFile(offset, keep_alive);
        });
        return;
      }
      return Close();
    }
    write_timer_.cancel();
    file_.reset();
    Cork(false);  // flushes the last partial segment
    if (!keep_alive) return Close();
    Read();
  }

  void Cork(bool on) {
    int v = on ? 1 : 0;
    ::setsockopt(stream_.socket().native_handle(), IPPROTO_TCP, TCP_CORK, &v, sizeof(v));
  }

  void Fail(int status, const char* text) {
    Response r = Response::Text(status, text);
    Write(std::move(r), false, false, 11);
  }

  void Close() {
    write_timer_.cancel();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.close();
  }

  beast::tcp_stream stream_;
  HttpServer::Impl& server_;
  std::shared_ptr<AsyncHandler> handler_;
  Request request_;  // outlives an asynchronous handler
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::span_body<const char>>> response_;
  std::shared_ptr<const std::string> body_;  // keeps the span's bytes alive
  std::shared_ptr<const FileBody> file_;     // the body being sent with sendfile
  std::optional<http::response<http::empty_body>> header_;
  std::optional<http::response_serializer<http::empty_body>> header_serializer_;
  asio::steady_timer write_timer_{stream_.get_executor()};
  size_t requests_ = 0;
  bool busy_ = false;
};

}  // namespace

void HttpServer::Impl::Accept(tcp::acceptor& acceptor, std::shared_ptr<AsyncHandler> handler) {
  acceptor.async_accept(NextLoop(), [this, &acceptor, handler](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted || stopping) return;
      spdlog::warn("accept failed: {}", ec.message());
    } else if (connections.load() >= limits.max_connections) {
      beast::error_code ignored;
      socket.close(ignored);  // over the cap: refuse by closing
    } else {
      connections.fetch_add(1);
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);  // replies are whole messages; never wait for ACKs
      auto session = std::make_shared<Session>(std::move(socket), *this, handler);
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
  auto ip = asio::ip::make_address(address, ec);
  if (ec) return Status::InvalidArgument(fmt::format("invalid listen address '{}': {}", address, ec.message()));
  auto acceptor = std::make_unique<tcp::acceptor>(*impl_->loops[0]);
  tcp::endpoint endpoint(ip, port);
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(impl_->limits.backlog, ec);
  if (ec) return Status::IoError(fmt::format("cannot listen on {}:{}: {}", address, port, ec.message()));
  uint16_t bound = acceptor->local_endpoint().port();
  impl_->Accept(*acceptor, std::make_shared<AsyncHandler>(std::move(handler)));
  impl_->acceptors.push_back(std::move(acceptor));
  return bound;
}

void HttpServer::Start() {
  if (impl_->started) return;
  impl_->started = true;
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

void HttpServer::WaitForSignal(std::chrono::milliseconds grace) {
  asio::io_context signals_ioc;
  asio::signal_set signals(signals_ioc, SIGINT, SIGTERM);
  signals.async_wait([](beast::error_code, int signal) { spdlog::info("signal {} received, shutting down", signal); });
  signals_ioc.run();
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
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (impl_->connections.load() > 0 && std::chrono::steady_clock::now() < deadline && impl_->started) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  impl_->work.clear();
  for (auto& loop : impl_->loops) loop->stop();
  for (auto& t : impl_->threads) {
    if (t.joinable()) t.join();
  }
}

size_t HttpServer::open_connections() const { return impl_->connections.load(); }

}  // namespace cincinnati::server
