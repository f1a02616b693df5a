// HttpGet: a blocking HTTP GET with libcurl (upstream graph fetches, tests).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "server/http_types.h"

namespace cincinnati::server {

struct HttpGetOptions {
  std::vector<std::string> headers;  // "Name: value"
  std::chrono::milliseconds timeout{30000};
  bool accept_gzip = true;           // sends Accept-Encoding and decodes the body
};

struct HttpResult {
  long status = 0;     // 0 when no response arrived
  std::string error;   // transport error; empty when a response arrived
  Headers headers;
  std::string body;
  bool ok() const { return error.empty() && status >= 200 && status < 300; }
};

HttpResult HttpGet(const std::string& url, const HttpGetOptions& options = {});

}  // namespace cincinnati::server
