// A real Debian `docker-registry` on an ephemeral 127.0.0.1 port, storing into a
// temporary directory, for integration tests.
#pragma once

#include <string>

#include "service_util.h"

namespace cincinnati::testing {

class LocalRegistry {
 public:
  // secure: TLS with a fresh self-signed certificate (in ca_dir()) and htpasswd basic
  // auth for `user` / `password`.
  explicit LocalRegistry(bool secure = false, const std::string& user = "", const std::string& password = "")
      : port_(FreePort()), secure_(secure) {
    std::string config = "version: 0.1\nlog: {level: error}\nstorage:\n  filesystem: {rootdirectory: " +
                         (dir_ / "data").string() + "}\n  delete: {enabled: true}\nhttp:\n  addr: 127.0.0.1:" +
                         std::to_string(port_) + "\n";
    if (secure) {
      std::filesystem::create_directories(dir_ / "ca");
      std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
                        "-addext subjectAltName=IP:127.0.0.1 -keyout " + (dir_ / "key.pem").string() + " -out " +
                        (dir_ / "ca/cert.pem").string() + " >/dev/null 2>&1 && htpasswd -Bbn " + user + " " + password +
                        " > " + (dir_ / "htpasswd").string() + " 2>/dev/null";
      setup_ok_ = std::system(cmd.c_str()) == 0;
      config += "  tls: {certificate: " + (dir_ / "ca/cert.pem").string() + ", key: " + (dir_ / "key.pem").string() +
                "}\nauth:\n  htpasswd: {realm: basic-realm, path: " + (dir_ / "htpasswd").string() + "}\n";
    }
    WriteFile(dir_ / "config.yml", config);
    process_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{"/usr/bin/docker-registry", "serve", (dir_ / "config.yml").string()});
    ready_ = setup_ok_ && WaitFor([this] {
      long s = http::Request(url() + "/v2/", {.ca_path = ca_dir()}).status;
      return s == 200 || s == 401;
    }, std::chrono::seconds(20));
  }

  bool ready() const { return ready_; }
  std::string url() const { return (secure_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port_); }
  std::string host_port() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string ca_dir() const { return secure_ ? (dir_ / "ca").string() : ""; }
  std::string log() const { return process_->log(); }
  std::filesystem::path storage() const { return dir_ / "data"; }
  void Stop() { process_->Stop(); }

 private:
  TempDir dir_;
  int port_;
  bool secure_;
  bool setup_ok_ = true;
  std::unique_ptr<ChildProcess> process_;
  bool ready_ = false;
};

}  // namespace cincinnati::testing
