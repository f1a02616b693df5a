// Listening TCP sockets as values: bound here, or given to this process at start the way
// systemd's socket activation gives them (also the agent's hand-over, hand_over.h), and
// handed on open, so that a port never refuses a connection while its server changes.
//
// Contract:
// - ListeningSocket owns one descriptor (closed by its destructor) and is move-only.
//   Every descriptor here is close-on-exec: nothing started later inherits it unless it
//   is passed on on purpose (dup2 onto 3.., which clears the flag on the copy).
// - BindListeningSocket binds address:port (port 0 picks a free one; "localhost" is
//   127.0.0.1; an IPv6 address may come bracketed) with SO_REUSEADDR and listens.
// - TakeInheritedListeners reads LISTEN_FDS=N, LISTEN_PID and LISTEN_FDNAMES. None set:
//   an empty list. Set: LISTEN_PID must be this process's id and each of the descriptors
//   3 .. 3+N-1 a listening TCP socket (SO_ACCEPTCONN, SOCK_STREAM, AF_INET or AF_INET6);
//   then all of them are taken, in order. Otherwise an error says which rule failed and
//   none is taken, so that the caller binds instead: with LISTEN_PID this process's, the
//   listening sockets among them are closed (they would hold the port to bind) and the
//   others made close-on-exec, never closed (something else the starter left open). The
//   three variables are removed from the environment in every case, so that no process
//   started later takes them for its own.
// - PortOf is the socket's bound local port (0 when it cannot be read).
// Not thread-safe against other changes of the environment (setenv, unsetenv); call
// early in main's thread. Never throws.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace cincinnati::http_server {

// The descriptors of inherited listeners start here (after stdin, stdout and stderr).
inline constexpr int kFirstInheritedDescriptor = 3;

class ListeningSocket {
 public:
  explicit ListeningSocket(int fd) : fd_(fd) {}
  ~ListeningSocket();
  ListeningSocket(ListeningSocket&& other) noexcept : fd_(other.release()) {}
  ListeningSocket& operator=(ListeningSocket&& other) noexcept;
  ListeningSocket(const ListeningSocket&) = delete;
  ListeningSocket& operator=(const ListeningSocket&) = delete;

  int fd() const { return fd_; }
  // Gives up ownership: the caller closes the descriptor.
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

Result<ListeningSocket> BindListeningSocket(const std::string& address, uint16_t port, int backlog);

Result<std::vector<ListeningSocket>> TakeInheritedListeners();

uint16_t PortOf(const ListeningSocket& socket);

}  // namespace cincinnati::http_server
