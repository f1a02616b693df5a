#include "core/internal_metadata.h"

#include <charconv>

#include <fmt/format.h>

#include "core/hotfix_rule.h"
#include "core/strings.h"

namespace cincinnati {
namespace {

// A decimal integer, optionally negative, with nothing else around it.
Result<int64_t> ParseInteger(std::string_view text, int64_t min, int64_t max, std::string_view what) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    return Status::InvalidArgument(fmt::format("{} '{}' is not an integer", what, text));
  }
  if (value < min || value > max) {
    return Status::InvalidArgument(fmt::format("{} {} is out of range [{}, {}]", what, value, min, max));
  }
  return value;
}

bool IsListWord(std::string_view text) {
  return !text.empty() && text.find_first_of(",;=:") == std::string_view::npos;
}

}  // namespace

bool IsReservedKey(std::string_view key, std::string_view prefix) {
  if (key.size() <= prefix.size() + 1 || !key.starts_with(prefix) || key[prefix.size()] != '.') return false;
  std::string_view suffix = key.substr(prefix.size() + 1);
  for (std::string_view reserved : kReservedSuffixes) {
    if (suffix == reserved) return true;
  }
  return false;
}

std::string EncodeChannelStart(std::string_view channel, int64_t start) { return fmt::format("{}={}", channel, start); }

Result<std::vector<ChannelStart>> DecodePhasedStarts(std::string_view value) {
  std::vector<ChannelStart> out;
  for (std::string_view item : Split(value, ',')) {
    // A channel name may hold '=' (graph-data does not forbid it); the start never does.
    size_t eq = item.rfind('=');
    if (eq == std::string_view::npos || eq == 0) {
      return Status::InvalidArgument(fmt::format("item '{}': expected <channel>=<unix seconds>", item));
    }
    auto start = ParseInteger(item.substr(eq + 1), kEarliestTime, kLatestTime, "start");
    if (!start.ok()) return start.status().WithContext(fmt::format("item '{}'", item));
    out.push_back(ChannelStart{std::string(item.substr(0, eq)), *start});
  }
  return out;
}

std::string EncodeChannelRollouts(const ChannelRollouts& rollouts) {
  if (rollouts.rules.empty()) return "";
  std::string out = rollouts.channel + ":";
  for (size_t i = 0; i < rollouts.rules.size(); ++i) {
    out += fmt::format("{}{}={}", i ? "," : "", rollouts.rules[i].criterion, rollouts.rules[i].seconds);
  }
  return out;
}

Result<std::vector<ChannelRollouts>> DecodePhasedRollouts(std::string_view value) {
  std::vector<ChannelRollouts> out;
  for (std::string_view block : Split(value, ';')) {
    size_t colon = block.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == block.size()) {
      return Status::InvalidArgument(fmt::format("block '{}': expected <channel>:<criterion>=<seconds>,...", block));
    }
    ChannelRollouts channel{std::string(block.substr(0, colon)), {}};
    for (std::string_view rule : Split(block.substr(colon + 1), ',')) {
      size_t eq = rule.find('=');
      if (eq == std::string_view::npos || !IsListWord(rule.substr(0, eq))) {
        return Status::InvalidArgument(
            fmt::format("block '{}': rule '{}': expected <criterion>=<seconds>", block, rule));
      }
      auto seconds = ParseInteger(rule.substr(eq + 1), 0, kLongestWindow, "window");
      if (!seconds.ok()) return seconds.status().WithContext(fmt::format("block '{}'", block));
      channel.rules.push_back(RolloutRule{std::string(rule.substr(0, eq)), *seconds});
    }
    out.push_back(std::move(channel));
  }
  return out;
}

Status CheckInternalMetadata(const Metadata& metadata, std::string_view prefix) {
  auto check = [&](std::string_view suffix, auto decode) -> Status {
    auto it = metadata.find(PrefixedKey(prefix, suffix));
    if (it == metadata.end()) return Status::OK();
    auto decoded = decode(it->second);
    return decoded.ok() ? Status::OK() : decoded.status().WithContext(it->first);
  };
  CINCINNATI_RETURN_IF_ERROR(check(kPhasedStartSuffix, DecodePhasedStarts));
  CINCINNATI_RETURN_IF_ERROR(check(kPhasedRolloutsSuffix, DecodePhasedRollouts));
  CINCINNATI_RETURN_IF_ERROR(check(kHotfixRulesSuffix, DecodeHotfixRules));
  // channel.targets is a plain list: any string decodes.
  return Status::OK();
}

}  // namespace cincinnati
