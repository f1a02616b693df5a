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

// Percent-escapes the characters in `special` (and '%').
std::string Escape(std::string_view text, std::string_view special) {
  std::string out;
  for (char c : text) {
    if (c == '%' || special.find(c) != std::string_view::npos) {
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out;
}

Result<std::string> Unescape(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    unsigned value = 0;
    auto hex = text.substr(i + 1, 2);
    auto [end, error] = std::from_chars(hex.data(), hex.data() + hex.size(), value, 16);
    if (hex.size() != 2 || error != std::errc() || end != hex.data() + 2) {
      return Status::InvalidArgument(fmt::format("'{}': bad escape at offset {}", text, i));
    }
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
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

std::string EncodeBlockRecord(const BlockRecord& record) {
  return fmt::format("{}:{}={}", record.conditional ? 'c' : 'u', Escape(record.file, ";:="), Escape(record.from_regex, ";"));
}

Result<std::vector<BlockRecord>> DecodeBlockRecords(std::string_view value) {
  std::vector<BlockRecord> out;
  for (std::string_view item : Split(value, ';')) {
    size_t eq = item.find('=');
    if (item.size() < 3 || (item[0] != 'u' && item[0] != 'c') || item[1] != ':' || eq == std::string_view::npos) {
      return Status::InvalidArgument(fmt::format("item '{}': expected <u|c>:<file>=<from regex>", item));
    }
    auto file = Unescape(item.substr(2, eq - 2));
    if (!file.ok()) return file.status();
    auto regex = Unescape(item.substr(eq + 1));
    if (!regex.ok()) return regex.status();
    out.push_back(BlockRecord{item[0] == 'c', std::move(file).value(), std::move(regex).value()});
  }
  return out;
}

std::string EncodeRemovedEdge(const RemovedEdge& edge) { return edge.from + "=" + edge.cause; }

Result<std::vector<RemovedEdge>> DecodeRemovedEdges(std::string_view value) {
  std::vector<RemovedEdge> out;
  for (std::string_view item : Split(value, ',')) {
    size_t eq = item.rfind('=');
    if (eq == std::string_view::npos || eq == 0 || !IsListWord(item.substr(eq + 1))) {
      return Status::InvalidArgument(fmt::format("item '{}': expected <version>=<cause>", item));
    }
    out.push_back(RemovedEdge{std::string(item.substr(0, eq)), std::string(item.substr(eq + 1))});
  }
  return out;
}

bool HasExplanationKeys(const Graph& graph, std::string_view prefix) {
  for (std::string_view suffix : kExplanationSuffixes) {
    const std::string key = PrefixedKey(prefix, suffix);
    for (const Node& node : graph.nodes()) {
      if (node.metadata.count(key)) return true;
    }
  }
  return false;
}

Graph StripExplanationKeys(const Graph& graph, std::string_view prefix) {
  Graph out = graph;
  for (std::string_view suffix : kExplanationSuffixes) {
    const std::string key = PrefixedKey(prefix, suffix);
    for (NodeIndex i = 0; i < out.node_count(); ++i) out.mutable_metadata(i).erase(key);
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
  CINCINNATI_RETURN_IF_ERROR(check(kBlockedBySuffix, DecodeBlockRecords));
  CINCINNATI_RETURN_IF_ERROR(check(kRemovedPreviousSuffix, DecodeRemovedEdges));
  // channel.targets and removed.next are plain lists: any string decodes.
  return Status::OK();
}

}  // namespace cincinnati
