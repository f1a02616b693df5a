// Unix seconds as RFC 3339 date-times in UTC ("2020-05-12T00:00:00Z"), the form
// graph-data's phased rollouts and our explanations use. Total: an instant outside
// years 0000-9999 (which RFC 3339 cannot write) comes out as "unix time N".
#pragma once

#include <cstdint>
#include <string>

namespace cincinnati {

std::string FormatUnixSeconds(int64_t unix_seconds);

}  // namespace cincinnati
