// Request and Response: what the HTTP server hands to a handler and gets back,
// independent of the HTTP library. Header names are matched case-insensitively.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/client.h"

namespace cincinnati::http_server {

using Headers = http::Headers;  // case-insensitive names

struct Request {
  std::string method;  // "GET", "HEAD", ...
  std::string target;  // path and query as received
  std::string path;    // target before '?'
  std::string query;   // target after '?', without it
  Headers headers;     // first value of each header
  std::string body;    // up to ServerLimits::max_body_bytes

  const std::string* Header(std::string_view name) const;
};

// The same bytes as a body, in an in-memory file, so the server can send them with
// sendfile(2) and skip a copy (what nginx does for static files).
class FileBody {
 public:
  static std::shared_ptr<const FileBody> From(const std::string& bytes);  // nullptr on failure
  ~FileBody();
  int fd() const { return fd_; }
  size_t size() const { return size_; }

 private:
  FileBody(int fd, size_t size) : fd_(fd), size_(size) {}
  int fd_;
  size_t size_;
};

struct Response {
  int status = 200;
  Headers headers;
  // Shared so that precomputed bodies are served without copying.
  std::shared_ptr<const std::string> body;
  // Optional: more of the body, sent after `body` (an assembled answer's part that
  // differs per request, after the part it shares with every other).
  std::shared_ptr<const std::string> body_tail;
  std::shared_ptr<const FileBody> file;  // optional: `body` as a file, preferred for sending
  // Optional: header lines sent after `headers` as they are ("Name: value\r\n" each),
  // formatted once and shared by many responses (a signed answer's): a view of bytes that
  // the pointer keeps alive. Whoever makes them keeps CR and LF out of names and values.
  std::shared_ptr<const std::string_view> head_lines;

  static Response Text(int status, std::string body, std::string content_type = "text/plain; charset=utf-8");
  static Response Empty(int status);
};

}  // namespace cincinnati::http_server
