// Query strings as application/x-www-form-urlencoded: '&'-separated pairs, '+' is a
// space, %XX is a byte; for a repeated key the last value wins. A malformed escape
// makes the whole query invalid (invalid_params); decoded keys and values that are not
// UTF-8 have each ill-formed sequence replaced by U+FFFD.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "core/parameters.h"

namespace cincinnati::http_server {

Result<Parameters> ParseQuery(std::string_view query);

// Whether `key` appears in the raw query (value may be empty), decoding the key.
bool QueryHasKey(std::string_view query, std::string_view key);

Result<std::string> PercentDecode(std::string_view text);

// "k=v&k=v" in the parameters' (sorted) order, every byte but [A-Za-z0-9-._~] as %XX:
// what ParseQuery reads back to the same parameters.
std::string EncodeQuery(const Parameters& params);

}  // namespace cincinnati::http_server
