#include "core/strings.h"

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

}  // namespace cincinnati
