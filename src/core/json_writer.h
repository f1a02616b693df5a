// Compact JSON output with the reference's (serde_json's) string escaping: `"`, `\`
// and control characters are escaped (\b \f \n \r \t, else \u00xx), nothing else.
#pragma once

#include <string>
#include <string_view>

namespace cincinnati {

void AppendJsonString(std::string& out, std::string_view s);
std::string JsonString(std::string_view s);

}  // namespace cincinnati
