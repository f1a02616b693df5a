#include "http_server/http_server.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "http_server/server_internals.h"

namespace cincinnati::http_server {

void SetCloseOnExec(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

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
  std::lock_guard lock(accept_mu);
  if (!accepting || stopping || !acceptor.is_open()) return;
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
    Accept(acceptor, handler);
  });
}

void HttpServer::Impl::StopAccepting(std::vector<ListeningSocket>* released) {
  std::lock_guard lock(accept_mu);
  accepting = false;
  for (auto& acceptor : acceptors) {
    if (!acceptor->is_open()) continue;
    beast::error_code ec;
    // Either way the pending accept ends with operation_aborted and is not re-armed.
    if (released) {
      const int fd = acceptor->release(ec);
      if (!ec) released->emplace_back(fd);
    } else {
      acceptor->close(ec);
    }
  }
}

HttpServer::HttpServer(ServerLimits limits) : impl_(std::make_unique<Impl>(limits)) {}

HttpServer::~HttpServer() { Shutdown(std::chrono::milliseconds(0)); }

Result<uint16_t> HttpServer::Listen(const std::string& address, uint16_t port, Handler handler) {
  return ListenAsync(address, port, [handler = std::move(handler)](const Request& r, std::function<void(Response)> done) {
    done(handler(r));
  });
}

Result<uint16_t> HttpServer::ListenAsync(const std::string& address, uint16_t port, AsyncHandler handler) {
  CINCINNATI_ASSIGN_OR_RETURN(ListeningSocket socket, BindListeningSocket(address, port, impl_->limits.backlog));
  return ListenAsyncOn(std::move(socket), std::move(handler));
}

Result<uint16_t> HttpServer::ListenOn(ListeningSocket socket, Handler handler) {
  return ListenAsyncOn(std::move(socket), [handler = std::move(handler)](const Request& r, std::function<void(Response)> done) {
    done(handler(r));
  });
}

Result<uint16_t> HttpServer::ListenAsyncOn(ListeningSocket socket, AsyncHandler handler) {
  sockaddr_storage local{};
  socklen_t size = sizeof(local);
  if (::getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&local), &size) != 0) {
    return Status::IoError(fmt::format("cannot serve descriptor {}: {}", socket.fd(), std::strerror(errno)));
  }
  SetCloseOnExec(socket.fd());
  auto acceptor = std::make_unique<tcp::acceptor>(*impl_->loops[0]);
  beast::error_code ec;
  const int fd = socket.fd();
  acceptor->assign(local.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
  if (ec) return Status::IoError(fmt::format("cannot serve descriptor {}: {}", fd, ec.message()));
  socket.release();  // the acceptor owns it now
  const uint16_t bound = acceptor->local_endpoint(ec).port();
  tcp::acceptor& serving = *acceptor;
  {
    std::lock_guard lock(impl_->accept_mu);
    impl_->acceptors.push_back(std::move(acceptor));
  }
  impl_->Accept(serving, std::make_shared<AsyncHandler>(std::move(handler)));
  return bound;
}

std::vector<ListeningSocket> HttpServer::ReleaseListeners() {
  std::vector<ListeningSocket> released;
  impl_->StopAccepting(&released);
  return released;
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
  impl_->StopAccepting(nullptr);  // released listeners are not touched
  {
    std::lock_guard<std::mutex> lock(impl_->sessions_mu);
    for (const auto& weak : impl_->sessions) {
      if (auto s = weak.lock()) s->EndOnShutdown();
    }
  }
  // A sweep now, after those, re-arms each loop's sweep at the shutdown's pace.
  for (size_t i = 0; i < impl_->loops.size(); ++i) {
    asio::post(*impl_->loops[i], [this, i] { impl_->Sweep(i); });
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
}

size_t HttpServer::open_connections() const { return impl_->connections.load(); }

}  // namespace cincinnati::http_server
