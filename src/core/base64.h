// Base64 (RFC 4648's standard alphabet, with padding) for registry credentials, Basic authentication
// and test tools. Pure functions over OpenSSL's codec; thread-safe. Decoding returns an
// error for input that is not base64, never throws.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace cincinnati {

std::string Base64Encode(std::string_view in);
Result<std::string> Base64Decode(std::string_view in);

}  // namespace cincinnati
