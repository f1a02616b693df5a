#include "policy/params.h"

#include <fmt/format.h>

namespace cincinnati::policy {
namespace {

bool AllOf(std::string_view s, bool allow_dash_dot) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (allow_dash_dot && (c == '-' || c == '.'));
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Status ValidateChannel(std::string_view channel) {
  if (AllOf(channel, true)) return Status::OK();
  return Status::InvalidParams(fmt::format("channel '{}' does not match regex '{}'", channel, kChannelPattern));
}

Status ValidateArch(std::string_view arch) {
  if (AllOf(arch, false)) return Status::OK();
  return Status::InvalidParams(fmt::format("arch '{}' does not match regex '{}'", arch, kArchPattern));
}

Result<std::string> RequiredParam(const Parameters& params, std::string_view name) {
  auto it = params.find(name);
  if (it == params.end()) return Status::MissingParams(std::string(name));
  return it->second;
}

}  // namespace cincinnati::policy
