// One HTTP exchange with a peer of the upgrade operator (an agent, Prometheus,
// Alertmanager, a webhook): the bearer token read from its file on every call (rotated
// tokens work without a restart), extra CA certificates, a timeout. A non-2xx answer is
// an error naming the method, URL and status, with the message of a Kubernetes Status
// document, a Prometheus/Alertmanager error document or the start of a text body. A
// command (not GET) that got no answer after its connection was made is an error that
// says so: it may have been delivered, its outcome is unknown (the caller reads the peer
// again rather than assume it failed).
// Thread-safe; never throws.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/status.h"

namespace cincinnati::upgrade {

struct HttpPeer {
  std::string token_file;
  std::string ca_path;
  std::chrono::milliseconds timeout{10000};
  std::vector<std::string> headers;  // extra "Name: value"
};

// The body of a 2xx answer.
Result<std::string> CallPeer(const HttpPeer& peer, const std::string& method, const std::string& url,
                             const std::string& body = "", const std::string& content_type = "application/json");

}  // namespace cincinnati::upgrade
