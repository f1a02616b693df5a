#include "http_server/query.h"

#include <fmt/format.h>

#include "core/strings.h"

namespace cincinnati::http_server {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<std::string> PercentDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%') {
      int hi = i + 2 < text.size() ? HexValue(text[i + 1]) : -1;
      int lo = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return Status::InvalidParams(fmt::format("malformed percent-encoding in '{}'", ToValidUtf8(text)));
      }
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string EncodeQuery(const Parameters& params) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  auto encode = [&](std::string_view text) {
    for (unsigned char c : text) {
      bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                   c == '.' || c == '_' || c == '~';
      if (plain) {
        out += static_cast<char>(c);
      } else {
        out += '%';
        out += kHex[c >> 4];
        out += kHex[c & 15];
      }
    }
  };
  for (const auto& [key, value] : params) {
    if (!out.empty()) out += '&';
    encode(key);
    out += '=';
    encode(value);
  }
  return out;
}

Result<Parameters> ParseQuery(std::string_view query) {
  Parameters params;
  if (query.empty()) return params;
  for (std::string_view pair : Split(query, '&')) {
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    CINCINNATI_ASSIGN_OR_RETURN(std::string key, PercentDecode(pair.substr(0, eq)));
    std::string value;
    if (eq != std::string_view::npos) {
      CINCINNATI_ASSIGN_OR_RETURN(value, PercentDecode(pair.substr(eq + 1)));
    }
    // Decoded bytes that are not UTF-8 become U+FFFD, as in the reference, so no answer
    // (an error echoing a channel, say) carries invalid UTF-8.
    MakeValidUtf8(key);
    MakeValidUtf8(value);
    params.insert_or_assign(std::move(key), std::move(value));
  }
  return params;
}

bool QueryHasKey(std::string_view query, std::string_view key) {
  for (std::string_view pair : Split(query, '&')) {
    auto decoded = PercentDecode(pair.substr(0, pair.find('=')));
    if (decoded.ok() && *decoded == key) return true;
  }
  return false;
}

}  // namespace cincinnati::http_server
