#include <netinet/in.h>
#include <sys/sendfile.h>

#include <array>
#include <cerrno>

#include <spdlog/spdlog.h>

#include "http_server/response_head.h"
#include "http_server/server_internals.h"

namespace cincinnati::http_server {

void Session::Start() {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] {
    self->loop_.sessions.push_back(self);
    self->Read();
  });
}

void Session::EndOnShutdown() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    if (self->closed_ || self->busy_ || self->half_closed_) return;
    if (self->requests_ == 0) {
      self->deadline_ = std::min(self->deadline_, Now() + kFirstRequestOnShutdown);  // its request may be on its way
    } else if (!self->NextRequestHasCome()) {
      self->HalfClose();
    }
  });
}

void Session::CloseIfPast(Clock::time_point now) {
  if (!closed_ && now >= deadline_) Close();
}

void Session::Read() {
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(server_.limits.max_head_bytes));
  parser_->body_limit(server_.limits.max_body_bytes);
  deadline_ = Now() +
              (requests_ == 0 ? server_.limits.first_request_timeout : server_.limits.keep_alive_timeout);
  busy_ = false;
  // Kept alive by an answer that left before the shutdown began.
  if (server_.stopping && requests_ > 0 && !NextRequestHasCome()) HalfClose();
  http::async_read(socket_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
}

void Session::OnRead(beast::error_code ec) {
  if (closed_) return;
  if (half_closed_) return Close();  // the client's end of stream, or a request it sent past our FIN
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

void Session::Write(Response res) {
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

void Session::Written(bool keep_alive) {
  body_.reset();
  body_tail_.reset();
  if (!keep_alive) return Close();
  Read();
}

void Session::WriteFile(bool keep_alive) {
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

void Session::SendFile(off_t offset, bool keep_alive) {
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

void Session::Fail(int status, const char* text) {
  keep_alive_ = false;
  head_request_ = false;
  version_ = 11;
  Write(server_.error_response ? server_.error_response(status, text) : Response::Text(status, text));
}

bool Session::NextRequestHasCome() {
  beast::error_code ec;
  return buffer_.size() > 0 || socket_.available(ec) > 0;
}

void Session::HalfClose() {
  half_closed_ = true;
  beast::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  deadline_ = std::min(deadline_, Now() + kLingerOnShutdown);
}

void Session::Close() {
  if (closed_) return;
  closed_ = true;
  beast::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  socket_.close(ec);
}

}  // namespace cincinnati::http_server
