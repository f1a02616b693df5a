// HttpServer: an asynchronous HTTP/1.1 server (Boost.Beast) with one I/O thread per
// core and any number of listeners, each with its own handler.
//
// Handlers run on I/O threads and must be quick (bodies are precomputed). The server
// bounds the request head (line + headers) and body, the time to receive the first
// request on a connection and the idle time between requests, and the number of open
// connections. Keep-alive is on unless disabled. HEAD is answered like GET without a
// body. Shutdown() stops accepting, ends idle connections, lets in-flight requests
// finish (their connections then close) and returns when all are done or the grace
// period ends.
//
// Shutting down never costs a client a request it could not retry: a connection
// accepted but not yet read from is given half a second (within its own first request
// time-out) for its request, which is answered; an idle keep-alive connection whose
// next request has already come is answered too, with Connection: close; any other
// idle one is half-closed (FIN), and read from until the client closes it (at most a
// quarter second), so that a request crossing the FIN meets an orderly end of stream,
// which clients retry on a new connection, rather than a reset.
//
// Listeners: Listen binds; ListenOn serves a socket this process was given (by systemd,
// or by the process it takes over from: listening_socket.h). ReleaseListeners stops
// accepting without closing them and hands them to the caller, to pass on: connections
// that arrive meanwhile wait in the kernel's backlog for the next server.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "http_server/http_types.h"
#include "http_server/listening_socket.h"

namespace cincinnati::http_server {

struct ServerLimits {
  size_t max_head_bytes = 16 * 1024;
  size_t max_body_bytes = 8 * 1024;
  std::chrono::milliseconds first_request_timeout{5000};  // reference: client_timeout
  std::chrono::milliseconds keep_alive_timeout{10000};    // 0 disables keep-alive
  // How long an answer may take to leave once it is ready (a client that stopped
  // reading is dropped); the handler's own time does not count.
  std::chrono::milliseconds write_timeout{60000};
  size_t max_connections = 16384;
  int backlog = 1024;
  size_t threads = 0;  // 0: one per CPU this process may use (env/cpus.h)
};

using Handler = std::function<Response(const Request&)>;
// Answers later, from any thread, by calling the responder exactly once. A responder
// holds its connection, whose end touches the server: every responder is called and
// dropped before the HttpServer is destroyed.
using AsyncHandler = std::function<void(const Request&, std::function<void(Response)>)>;

class HttpServer {
 public:
  explicit HttpServer(ServerLimits limits = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds address:port (port 0 picks a free one) and returns the bound port. Call
  // before Start().
  Result<uint16_t> Listen(const std::string& address, uint16_t port, Handler handler);
  Result<uint16_t> ListenAsync(const std::string& address, uint16_t port, AsyncHandler handler);
  // Serves an already listening socket (taken over: closed with the server) and returns
  // its port. Call before Start().
  Result<uint16_t> ListenOn(ListeningSocket socket, Handler handler);
  Result<uint16_t> ListenAsyncOn(ListeningSocket socket, AsyncHandler handler);
  // Stops accepting and gives the listening sockets, open and still listening, to the
  // caller (none after Shutdown, or when called twice). Connections accepted before are
  // served as before; Shutdown then ends them without touching the sockets. Call from a
  // thread of the caller's, never from a handler.
  std::vector<ListeningSocket> ReleaseListeners();
  // How the server words the answers it gives itself (400, 413, 431) instead of a
  // handler: plain text unless set (the agent's and operator's APIs answer Kubernetes
  // Status documents). Call before Start().
  void SetErrorResponse(std::function<Response(int status, std::string_view message)> respond);
  void Start();
  // From now on SIGTERM and SIGINT are held for WaitForSignal instead of ending the
  // process: call it before the server is reachable, so that a signal sent as soon as
  // the port answers still shuts down gracefully.
  void CatchSignals();
  // Blocks until SIGTERM or SIGINT (caught here if CatchSignals was not called), then
  // calls `before_shutdown` (to end requests that would wait, such as watches) and
  // shuts down gracefully.
  void WaitForSignal(std::chrono::milliseconds grace = std::chrono::seconds(10), std::function<void()> before_shutdown = {});
  void Shutdown(std::chrono::milliseconds grace = std::chrono::seconds(10));
  size_t open_connections() const;

  struct Impl;  // public so the connection class in the .cc can name it

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace cincinnati::http_server
