#include "core/strings.h"

#include <fmt/format.h>

namespace cincinnati {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

}  // namespace

std::string_view TrimWhitespace(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char separator) {
  std::vector<std::string_view> items;
  size_t start = 0;
  while (true) {
    size_t end = s.find(separator, start);
    if (end == std::string_view::npos) {
      items.push_back(s.substr(start));
      return items;
    }
    items.push_back(s.substr(start, end - start));
    start = end + 1;
  }
}

bool ListContains(std::string_view list, std::string_view item) {
  for (std::string_view entry : Split(list, ',')) {
    if (TrimWhitespace(entry) == item) return true;
  }
  return false;
}

namespace {

// Length of the longest prefix of s[i..] that starts a well-formed sequence (Unicode's
// "maximal subpart"), and whether it completes one.
std::pair<size_t, bool> Utf8Prefix(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return {1, true};
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return {1, false};
  }
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) return {k, false};
    auto b = static_cast<unsigned char>(s[i + k]);
    bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return {k, false};
  }
  return {len, true};
}

}  // namespace

std::string FailureCause(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (size_t i = 0; i < message.size(); ++i) {
    bool digit = message[i] >= '0' && message[i] <= '9';
    if (!digit) {
      out += message[i];
    } else if (i == 0 || !(message[i - 1] >= '0' && message[i - 1] <= '9')) {
      out += '#';
    }
  }
  return out;
}

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    auto [n, ok] = Utf8Prefix(text, i);
    if (!ok) return false;
    i += n;
  }
  return true;
}

void MakeValidUtf8(std::string& text) {
  if (!IsValidUtf8(text)) text = ToValidUtf8(text);
}

std::string ToValidUtf8(std::string_view text) {
  if (IsValidUtf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size();) {
    auto [n, ok] = Utf8Prefix(text, i);
    if (ok) {
      out.append(text.substr(i, n));
    } else {
      out += "\xEF\xBF\xBD";
    }
    i += n;
  }
  return out;
}

std::string Printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out;
}

std::string Abbreviate(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return std::string(text.substr(0, cut)) + "... (" + std::to_string(text.size()) + " bytes in all)";
}

}  // namespace cincinnati
