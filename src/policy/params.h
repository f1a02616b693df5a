// Client parameter validation shared by the policy transforms (`channel` must match ^[0-9a-z\-\.]+$, `arch` ^[0-9a-z]+$).
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "core/transform.h"

namespace cincinnati::policy {

inline constexpr std::string_view kChannelParam = "channel";
inline constexpr std::string_view kArchParam = "arch";
inline constexpr std::string_view kChannelPattern = "^[0-9a-z\\-\\.]+$";
inline constexpr std::string_view kArchPattern = "^[0-9a-z]+$";

Status ValidateChannel(std::string_view channel);
Status ValidateArch(std::string_view arch);

// The value of a parameter, or MissingParams naming it.
Result<std::string> RequiredParam(const Parameters& params, std::string_view name);

}  // namespace cincinnati::policy
