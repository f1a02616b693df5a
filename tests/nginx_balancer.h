// NginxBalancer: the real Debian nginx (/usr/sbin/nginx, scripts/deps.sh --test installs
// nginx-light) as a round-robin HTTP load balancer for one test, in front of services
// on 127.0.0.1, as a Kubernetes Service or a site's balancer stands in front of
// replicas. It listens on 127.0.0.1 on a free port, runs in the foreground
// (`daemon off`) with its configuration, pid file, logs and temporary files in a
// temporary directory, and is stopped (SIGTERM: fast shutdown) when the object dies.
// Every wait is bounded.
//
// - Ports: a free port is found by binding port 0 and closing it, then nginx binds it;
//   should another process take it in between, nginx fails to bind and is started
//   again on another port (a few attempts).
// - Root: as root the master would hand its workers to `nobody`, who may not reach the
//   test's directory (a TMPDIR under /root, say), so the configuration says
//   `user root;`. As anyone else the directive is left out (nginx would ignore it with
//   a warning: workers run as the user who started it). Both work: its test passes as
//   root and under `setpriv --reuid=nobody --regid=nogroup --clear-groups`.
// - Proxying: HTTP/1.1 to the upstreams with idle connections kept (`keepalive`),
//   request bodies passed on (POST, up to 64 MiB), the client's Host passed on. Which
//   failures send a request to the next upstream is `Options::next_upstream`
//   (`proxy_next_upstream`): "error timeout" by default, so a stopped or killed
//   upstream is skipped; "off" hands the client every failure; "error timeout
//   http_502 http_503" also skips an upstream that answers 502 or 503. nginx never
//   retries a POST that reached an upstream unless the list has `non_idempotent`.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "service_util.h"
#include "test_util.h"

namespace cincinnati::testing {

// How NginxBalancer proxies (outside the class: a nested struct with member
// initializers cannot be a default argument of its enclosing class in g++).
struct NginxBalancerOptions {
  // proxy_next_upstream: "off", or nginx's list of failures that move a request on.
  std::string next_upstream = "error timeout";
  // An upstream that failed this many times is left out for fail_timeout (nginx's
  // max_fails / fail_timeout); 0: never left out.
  int max_fails = 1;
  std::chrono::seconds fail_timeout{10};
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds read_timeout{60000};  // also bounds a long poll
  int keepalive = 16;                              // idle upstream connections kept per worker
  int attempts = 5;                                // starts on a new port when the port was taken
  uint16_t first_port = 0;                         // tried first (0: a free one); if taken, free ones
};

class NginxBalancer {
 public:
  static constexpr const char* kBinary = "/usr/sbin/nginx";
  // Whether nginx is installed (tests GTEST_SKIP without it).
  static bool Available() { return ::access(kBinary, X_OK) == 0; }

  using Options = NginxBalancerOptions;

  explicit NginxBalancer(std::vector<uint16_t> upstream_ports, Options options = {})
      : upstreams_(std::move(upstream_ports)), options_(std::move(options)) {
    if (!Available()) {
      error_ = std::string(kBinary) + " is missing (scripts/deps.sh --test installs nginx-light)";
      return;
    }
    if (upstreams_.empty()) {
      error_ = "no upstreams";
      return;
    }
    for (int attempt = 0; attempt < options_.attempts && !ready_; ++attempt) {
      error_.clear();
      Start(attempt == 0 && options_.first_port != 0 ? options_.first_port : static_cast<uint16_t>(FreePort()));
      if (!ready_ && log().find("Address already in use") == std::string::npos) break;  // not a port race
    }
  }
  ~NginxBalancer() { Stop(); }
  NginxBalancer(const NginxBalancer&) = delete;
  NginxBalancer& operator=(const NginxBalancer&) = delete;

  bool ready() const { return ready_; }
  // Why it is not ready (with nginx's output and error log), else empty.
  const std::string& error() const { return error_; }
  uint16_t port() const { return port_; }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  // nginx's output, its error log, and its access log (one line per request:
  // method, path, status, and the upstream(s) tried, e.g. "127.0.0.1:41234, 127.0.0.1:41236").
  std::string log() const {
    std::string out;
    if (process_) out += process_->log();
    out += ReadFile(dir_ / "error.log");
    out += ReadFile(dir_ / "access.log");
    return out;
  }
  std::string access_log() const { return ReadFile(dir_ / "access.log"); }
  const std::filesystem::path& config_path() const { return config_; }
  pid_t pid() const { return process_ ? process_->pid() : -1; }

  // Fast shutdown (SIGTERM to the master, which ends its workers), SIGKILL after 15 s.
  void Stop() {
    if (process_) process_->Stop();
    process_.reset();
    ready_ = false;
  }

 private:
  static std::string Ms(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + "ms"; }

  std::string Config(uint16_t port) const {
    const std::string d = dir_.path().string();
    std::string servers;
    for (uint16_t upstream : upstreams_) {
      servers += "    server 127.0.0.1:" + std::to_string(upstream) + " max_fails=" + std::to_string(options_.max_fails) +
                 " fail_timeout=" + std::to_string(options_.fail_timeout.count()) + "s;\n";
    }
    return std::string(::geteuid() == 0 ? "user root;\n" : "") +
           "worker_processes 1;\n"
           "pid " + d + "/nginx.pid;\n"
           "error_log " + d + "/error.log notice;\n"
           "events { worker_connections 1024; }\n"
           "http {\n"
           "  log_format balancer '$request_method $uri $status upstream=$upstream_addr upstream_status=$upstream_status';\n"
           "  access_log " + d + "/access.log balancer;\n"
           "  client_body_temp_path " + d + "/client_body;\n"
           "  proxy_temp_path " + d + "/proxy;\n"
           "  fastcgi_temp_path " + d + "/fastcgi;\n"
           "  uwsgi_temp_path " + d + "/uwsgi;\n"
           "  scgi_temp_path " + d + "/scgi;\n"
           "  client_max_body_size 64m;\n"
           "  upstream backends {\n" + servers +
           "    keepalive " + std::to_string(options_.keepalive) + ";\n"
           "  }\n"
           "  server {\n"
           "    listen 127.0.0.1:" + std::to_string(port) + ";\n"
           "    location / {\n"
           "      proxy_pass http://backends;\n"
           "      proxy_http_version 1.1;\n"
           "      proxy_set_header Connection \"\";\n"
           "      proxy_set_header Host $http_host;\n"
           "      proxy_next_upstream " + options_.next_upstream + ";\n"
           "      proxy_connect_timeout " + Ms(options_.connect_timeout) + ";\n"
           "      proxy_read_timeout " + Ms(options_.read_timeout) + ";\n"
           "      proxy_send_timeout " + Ms(options_.read_timeout) + ";\n"
           "    }\n"
           "  }\n"
           "}\n";
  }

  // Whether something accepts TCP connections on 127.0.0.1:port.
  static bool Accepts(uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    ::close(fd);
    return ok;
  }

  void Start(uint16_t port) {
    Stop();
    std::error_code ec;
    std::filesystem::remove(dir_ / "error.log", ec);
    config_ = dir_ / "nginx.conf";
    WriteFile(config_, Config(port));
    process_ = std::make_unique<ChildProcess>(std::vector<std::string>{
        kBinary, "-p", dir_.path().string(), "-e", (dir_ / "error.log").string(), "-c", config_.string(), "-g", "daemon off;"});
    // Ready once nginx (not a stranger that took the port) answers there: the
    // master writes its pid file after it has bound its listeners.
    // nginx tries a taken port for 2.5 s (five times, 500 ms apart), then exits.
    const std::string pid = std::to_string(process_->pid());
    bool exited = false;
    WaitFor(
        [&] {
          exited = !process_->running();
          ready_ = !exited && ReadFile(dir_ / "nginx.pid") == pid + "\n" && Accepts(port);
          return exited || ready_;
        },
        std::chrono::seconds(15));
    if (ready_) {
      port_ = port;
      return;
    }
    error_ = "nginx did not start on 127.0.0.1:" + std::to_string(port) + (exited ? " (it exited): " : " within 15 s: ") + log();
    Stop();
  }

  TempDir dir_;
  std::vector<uint16_t> upstreams_;
  Options options_;
  std::filesystem::path config_;
  std::unique_ptr<ChildProcess> process_;
  std::string error_;
  uint16_t port_ = 0;
  bool ready_ = false;
};

}  // namespace cincinnati::testing
