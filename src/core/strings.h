// Small string helpers for the comma-separated lists that metadata values hold.
#pragma once

#include <string_view>
#include <vector>

namespace cincinnati {

// Removes leading and trailing spaces, tabs, CR and LF.
std::string_view TrimWhitespace(std::string_view s);

// Splits on `separator`, keeping empty items ("a,,b" has three items).
std::vector<std::string_view> Split(std::string_view s, char separator);

// Whether a comma-separated list contains `item` once each entry is trimmed.
bool ListContains(std::string_view list, std::string_view item);

}  // namespace cincinnati
