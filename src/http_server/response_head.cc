#include "http_server/response_head.h"

#include <boost/beast/http/status.hpp>

#include <charconv>

namespace cincinnati::http_server {
namespace {

void AppendSafe(std::string& out, std::string_view text) {
  // Two scans of the text (memchr each): find_first_of("\r\n") calls memchr once per
  // character of it, which cost long headers (a signature's) a microsecond.
  if (text.find('\r') == std::string_view::npos && text.find('\n') == std::string_view::npos) {
    out += text;
    return;
  }
  for (char c : text) {
    if (c != '\r' && c != '\n') out += c;
  }
}

void AppendNumber(std::string& out, size_t n) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
  out.append(digits, end);
}

}  // namespace

void AppendResponseHead(std::string& out, const Response& response, unsigned version, size_t content_length,
                        bool keep_alive) {
  namespace http = boost::beast::http;
  out += version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  AppendNumber(out, static_cast<size_t>(response.status));
  out += ' ';
  out += http::obsolete_reason(http::int_to_status(static_cast<unsigned>(response.status)));
  out += "\r\n";
  for (const auto& [name, value] : response.headers) {
    AppendSafe(out, name);
    out += ": ";
    AppendSafe(out, value);
    out += "\r\n";
  }
  if (response.head_lines) out += *response.head_lines;
  out += "Content-Length: ";
  AppendNumber(out, content_length);
  out += "\r\n";
  if (version >= 11 && !keep_alive) out += "Connection: close\r\n";
  if (version == 10 && keep_alive) out += "Connection: keep-alive\r\n";
  out += "\r\n";
}

}  // namespace cincinnati::http_server
