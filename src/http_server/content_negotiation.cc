#include "http_server/content_negotiation.h"

#include "core/strings.h"

namespace cincinnati::http_server {

std::optional<std::string> NegotiateContentType(const std::string* accept, const std::vector<std::string>& offered,
                                                std::string_view default_type) {
  if (accept == nullptr) return std::string(kCincinnatiV1);
  const std::string& value = *accept;
  bool acceptable = value == "*" || value == "*/*" || value == default_type;
  for (const std::string& type : offered) {
    if (acceptable) break;
    acceptable = value == type || value == type.substr(0, type.find('/')) + "/*";
  }
  if (!acceptable) return std::nullopt;
  for (std::string_view part : Split(value, '/')) {
    if (part == "*") return std::string(default_type);
  }
  return value;
}

bool AcceptsGzip(const std::string* accept_encoding) {
  if (accept_encoding == nullptr) return false;
  for (std::string_view item : Split(*accept_encoding, ',')) {
    std::vector<std::string_view> parts = Split(item, ';');
    std::string_view coding = TrimWhitespace(parts[0]);
    if (coding != "gzip" && coding != "*") continue;
    bool refused = false;
    for (size_t i = 1; i < parts.size(); ++i) {
      std::string_view p = TrimWhitespace(parts[i]);
      if (p.substr(0, 2) == "q=" && p.substr(2).find_first_not_of("0.") == std::string_view::npos) refused = true;
    }
    if (!refused) return true;
  }
  return false;
}

}  // namespace cincinnati::http_server
