#include "http_server/listening_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>
#include <fmt/format.h>

namespace cincinnati::http_server {
namespace {

constexpr char kListenFds[] = "LISTEN_FDS";
constexpr char kListenPid[] = "LISTEN_PID";
constexpr char kListenFdNames[] = "LISTEN_FDNAMES";
// More than any starter passes; a larger number is a mistake, not a list to walk.
constexpr int kMostInherited = 64;

void SetCloseOnExec(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

// The address to bind: "localhost" is the loopback address (make_address takes numeric
// addresses only); an IPv6 address may come bracketed, as in a URL.
std::string BindAddress(const std::string& address) {
  if (address == "localhost") return "127.0.0.1";
  if (address.size() > 2 && address.front() == '[' && address.back() == ']') return address.substr(1, address.size() - 2);
  return address;
}

std::optional<long> PositiveNumber(const char* text) {
  long value = 0;
  const char* end = text + std::strlen(text);
  auto [rest, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || rest != end || value <= 0) return std::nullopt;
  return value;
}

// Why `fd` is not a listening TCP socket ("" when it is one).
std::string WhyNotAListener(int fd) {
  if (::fcntl(fd, F_GETFD) < 0) return "is not open";
  int value = 0;
  socklen_t size = sizeof(value);
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &value, &size) != 0) {
    return errno == ENOTSOCK ? "is not a socket" : fmt::format("cannot be read ({})", std::strerror(errno));
  }
  if (value != SOCK_STREAM) return "is not a stream socket";
  size = sizeof(value);
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &value, &size) != 0 || (value != AF_INET && value != AF_INET6)) {
    return "is not a TCP socket";
  }
  size = sizeof(value);
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &value, &size) != 0 || value == 0) return "is not listening";
  return "";
}

// The descriptors LISTEN_FDS and LISTEN_PID give this process, checked.
Result<std::vector<ListeningSocket>> Inherited(const char* fds, const char* pid) {
  const std::optional<long> count = PositiveNumber(fds);
  if (!count || *count > kMostInherited) {
    return Status::InvalidArgument(fmt::format("{}={} is not a number of descriptors from 1 to {}", kListenFds, fds, kMostInherited));
  }
  if (!pid) return Status::InvalidArgument(fmt::format("{} is set without {}: not known to be for this process", kListenFds, kListenPid));
  const std::optional<long> for_pid = PositiveNumber(pid);
  if (!for_pid || *for_pid != static_cast<long>(::getpid())) {
    return Status::InvalidArgument(
        fmt::format("{}={} is for another process ({}), not this one ({})", kListenPid, pid, kListenPid, ::getpid()));
  }
  std::string wrong;
  std::vector<int> listeners;
  for (int fd = kFirstInheritedDescriptor; fd < kFirstInheritedDescriptor + *count; ++fd) {
    const std::string why = WhyNotAListener(fd);
    if (!why.empty()) wrong += fmt::format("{}descriptor {} {}", wrong.empty() ? "" : ", ", fd, why);
    if (why.empty()) listeners.push_back(fd);
    if (why != "is not open") SetCloseOnExec(fd);
  }
  if (!wrong.empty()) {
    // The good ones are closed all the same: they would hold the port the caller binds.
    for (int fd : listeners) ::close(fd);
    return Status::InvalidArgument(fmt::format("{}={}: {}; none is taken", kListenFds, fds, wrong));
  }
  std::vector<ListeningSocket> out;
  for (int fd = kFirstInheritedDescriptor; fd < kFirstInheritedDescriptor + *count; ++fd) out.emplace_back(fd);
  return out;
}

}  // namespace

ListeningSocket::~ListeningSocket() {
  if (fd_ >= 0) ::close(fd_);
}

ListeningSocket& ListeningSocket::operator=(ListeningSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Result<ListeningSocket> BindListeningSocket(const std::string& address, uint16_t port, int backlog) {
  boost::system::error_code ec;
  const auto ip = boost::asio::ip::make_address(BindAddress(address), ec);
  if (ec) {
    return Status::InvalidArgument(
        fmt::format("invalid listen address '{}': {} (give an IP address, or localhost)", address, ec.message()));
  }
  const boost::asio::ip::tcp::endpoint endpoint(ip, port);
  ListeningSocket socket(::socket(ip.is_v6() ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int on = 1;
  const char* step = "socket";
  if (socket.fd() >= 0) {
    step = "setsockopt";
    if (::setsockopt(socket.fd(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == 0) {
      step = "bind";
      if (::bind(socket.fd(), endpoint.data(), static_cast<socklen_t>(endpoint.size())) == 0) {
        step = "listen";
        if (::listen(socket.fd(), backlog) == 0) return socket;
      }
    }
  }
  return Status::IoError(fmt::format("cannot listen on {}:{}: {} ({})", address, port, std::strerror(errno), step));
}

Result<std::vector<ListeningSocket>> TakeInheritedListeners() {
  const char* fds = std::getenv(kListenFds);
  const char* pid = std::getenv(kListenPid);
  Result<std::vector<ListeningSocket>> out = fds ? Inherited(fds, pid) : std::vector<ListeningSocket>{};
  ::unsetenv(kListenFds);
  ::unsetenv(kListenPid);
  ::unsetenv(kListenFdNames);
  return out;
}

uint16_t PortOf(const ListeningSocket& socket) {
  sockaddr_storage address{};
  socklen_t size = sizeof(address);
  if (::getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&address), &size) != 0) return 0;
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  return 0;
}

}  // namespace cincinnati::http_server
