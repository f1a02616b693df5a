// HTTP client (libcurl): one blocking request, any method, with a body and headers.
// Used by the policy engine for its upstream, by the registry client, and by tests.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cincinnati::http {

struct CaseInsensitiveLess {
  bool operator()(std::string_view a, std::string_view b) const;
};
using Headers = std::map<std::string, std::string, CaseInsensitiveLess>;

struct RequestOptions {
  std::string method = "GET";
  std::vector<std::string> headers;  // "Name: value"
  std::string body;                  // sent when non-empty or for PUT/POST/PATCH
  std::chrono::milliseconds timeout{30000};
  bool accept_gzip = true;           // sends Accept-Encoding and decodes the body
  // Extra trust: *.pem and *.crt files up to two levels under this directory, added to
  // the system's certificate bundle (the reference's root_certificate_dir).
  std::string ca_path;
  bool head = false;                 // HEAD: no body expected
};

struct Result {
  long status = 0;     // 0 when no response arrived
  std::string error;   // transport error; empty when a response arrived
  Headers headers;     // last value of each header of the final response
  std::string body;
  bool ok() const { return error.empty() && status >= 200 && status < 300; }
  const std::string* Header(std::string_view name) const;
};

Result Request(const std::string& url, const RequestOptions& options = {});

// GET with headers; the policy engine's and the tests' common case.
struct GetOptions {
  std::vector<std::string> headers;
  std::chrono::milliseconds timeout{30000};
  bool accept_gzip = true;
};
Result Get(const std::string& url, const GetOptions& options = {});

}  // namespace cincinnati::http
