// One HTTP exchange, no redirect followed, on the calling thread's curl handle (kept
// for the thread's life so that its connections are reused). Internal to the client:
// Request() (client.h) follows redirects around it and states the contract.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "http/client.h"

namespace cincinnati::http::internal {

struct Hop {
  std::string url{};
  std::string method{};                // "HEAD": no body expected
  const std::string* body = nullptr;  // sent unless null (methods other than GET/HEAD)
  std::vector<std::string> headers{};
  std::chrono::milliseconds timeout{0};
};

struct HopResult {
  long status = 0;
  std::string error;  // names the URL
  ErrorKind error_kind = ErrorKind::kNone;
  Headers headers;
  std::string body;
  std::string redirect_url;  // absolute, when the answer has a usable Location
  long new_connections = 0;
};

// Uses options' accept_gzip, ca_path, max_body_bytes, max_body_name and stop.
HopResult PerformHop(const Hop& hop, const RequestOptions& options);

// The system's certificate bundle plus the certificates under `dir` (RequestOptions::
// ca_path), read once per directory and kept for the process's life.
const std::string& CaBundleFor(const std::string& dir);

}  // namespace cincinnati::http::internal
