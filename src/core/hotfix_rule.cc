#include "core/hotfix_rule.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/strings.h"

namespace cincinnati {
namespace {

bool TokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == ':' || c == '@' || c == '/' || c == '+' || c == '-';
}

std::string Join(const std::vector<std::string>& items, char separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += separator;
    out += items[i];
  }
  return out;
}

std::vector<std::string> SplitNonEmpty(std::string_view text, char separator) {
  std::vector<std::string> out;
  for (std::string_view item : Split(text, separator)) {
    if (!item.empty()) out.emplace_back(item);
  }
  return out;
}

}  // namespace

bool IsHotfixToken(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), TokenChar);
}

bool HotfixRule::AppliesTo(const ClusterInfo& cluster) const {
  if (!cluster.customer.empty() && std::find(customers.begin(), customers.end(), cluster.customer) != customers.end()) {
    return true;
  }
  for (const auto& selector : selectors) {
    bool all = !selector.empty();
    for (const auto& [key, value] : selector) {
      auto it = cluster.labels.find(key);
      all = all && it != cluster.labels.end() && it->second == value;
    }
    if (all) return true;
  }
  return false;
}

bool HotfixRule::InChannel(std::string_view channel) const {
  return std::find(channels.begin(), channels.end(), channel) != channels.end();
}

std::string EncodeHotfixRule(const HotfixRule& rule) {
  std::vector<std::string> selectors;
  for (const auto& selector : rule.selectors) {
    std::vector<std::string> pairs;
    for (const auto& [key, value] : selector) pairs.push_back(key + "=" + value);
    selectors.push_back(Join(pairs, '&'));
  }
  return rule.name + "|" + Join(rule.channels, ',') + "|" + Join(rule.customers, ',') + "|" + Join(selectors, ' ');
}

Result<std::vector<HotfixRule>> DecodeHotfixRules(std::string_view encoded) {
  std::vector<HotfixRule> rules;
  for (std::string_view entry : Split(encoded, ';')) {
    auto bad = [&](std::string_view why) {
      return Status::InvalidArgument(fmt::format("rule '{}': {}", entry, why));
    };
    std::vector<std::string_view> parts = Split(entry, '|');
    if (parts.size() != 4) return bad("expected name|channels|customers|selectors");
    if (!IsHotfixToken(parts[0])) return bad("the name is not a hotfix token");
    HotfixRule rule;
    rule.name = std::string(parts[0]);
    rule.channels = SplitNonEmpty(parts[1], ',');
    rule.customers = SplitNonEmpty(parts[2], ',');
    if (rule.channels.empty()) return bad("no channel");
    for (const auto* list : {&rule.channels, &rule.customers}) {
      for (const std::string& item : *list) {
        if (!IsHotfixToken(item)) return bad(fmt::format("'{}' is not a hotfix token", item));
      }
    }
    for (const std::string& selector : SplitNonEmpty(parts[3], ' ')) {
      std::map<std::string, std::string> labels;
      for (const std::string& pair : SplitNonEmpty(selector, '&')) {
        size_t eq = pair.find('=');
        if (eq == std::string::npos || !IsHotfixToken(pair.substr(0, eq))) {
          return bad(fmt::format("selector item '{}' is not key=value", pair));
        }
        std::string value = pair.substr(eq + 1);
        if (!value.empty() && !IsHotfixToken(value)) return bad(fmt::format("label value '{}' is not a hotfix token", value));
        labels[pair.substr(0, eq)] = std::move(value);
      }
      if (labels.empty()) return bad("an empty selector");
      rule.selectors.push_back(std::move(labels));
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

}  // namespace cincinnati
