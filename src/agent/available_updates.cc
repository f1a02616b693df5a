#include "agent/available_updates.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "core/metadata_keys.h"
#include "core/strings.h"

namespace cincinnati::agent {
namespace {

namespace reason = retrieval_reason;

bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// Step 6 of C5: only registered, well-formed rules stay.
bool RuleIsUsable(const MatchingRule& rule) {
  if (rule.type == "Always") return !rule.promql.has_value();
  if (rule.type == "PromQL") return rule.promql.has_value() && !rule.promql->empty();
  return false;
}

void SortDescending(std::vector<Release>& releases, const std::map<std::string, Version>& versions) {
  std::stable_sort(releases.begin(), releases.end(), [&](const Release& a, const Release& b) {
    return versions.at(b.version) < versions.at(a.version);
  });
}

UpdatesOrFailure Failure(std::string_view why, std::string message) {
  UpdatesOrFailure out;
  out.failure = {std::string(why), std::move(message)};
  return out;
}

}  // namespace

bool LooksLikeUrl(std::string_view text) {
  // Go checks the escapes of the path, host and fragment; the raw query is kept as is.
  const size_t fragment = text.find('#');
  const size_t query = text.substr(0, fragment).find('?');
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) return false;
    const bool in_query = query != std::string_view::npos && i > query && i < fragment;
    if (c == '%' && !in_query && (i + 2 >= text.size() || !IsHex(text[i + 1]) || !IsHex(text[i + 2]))) return false;
  }
  size_t colon = text.find(':');
  size_t slash = text.find('/');
  if (colon == 0) return false;  // "missing protocol scheme"
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon < slash)) {
    std::string_view scheme = text.substr(0, colon);
    if (!std::isalpha(static_cast<unsigned char>(scheme[0]))) return false;
    for (char c : scheme) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return false;
    }
    std::string_view rest = text.substr(colon + 1);
    if (rest.substr(0, 2) == "//") {
      std::string_view host = rest.substr(2, rest.find_first_of("/?#", 2) - 2);
      if (host.find(' ') != std::string_view::npos) return false;
    }
  }
  return true;
}

Result<Release> ReleaseFromNode(const UpdateNode& node) {
  // Every problem is reported, one per line (the CVO joins its errors).
  Release release;
  release.version = node.version.ToString();
  release.image = node.payload;
  std::vector<std::string> errors;
  auto not_string = [&](std::string_view key, std::string_view what) {
    auto it = node.non_string.find(std::string(key));
    if (it == node.non_string.end()) return false;
    errors.push_back(fmt::format("{} is not a string: {}", what, it->second));
    return true;
  };
  if (auto it = node.metadata.find("url"); it != node.metadata.end()) {
    if (LooksLikeUrl(it->second)) {
      release.url = it->second;
    } else {
      errors.push_back(fmt::format("invalid release URL: parse \"{}\": invalid URL", it->second));
    }
  } else {
    not_string("url", "URL");
  }
  const std::string arch_key(kReleaseArchitectureKey);
  if (auto it = node.metadata.find(arch_key); it != node.metadata.end()) {
    if (it->second == "multi") {
      release.multi_architecture = true;
    } else {
      errors.push_back(fmt::format("unrecognized {} value \"{}\"", arch_key, it->second));
    }
  } else {
    not_string(arch_key, arch_key);
  }
  const std::string channels_key = PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix);
  if (auto it = node.metadata.find(channels_key); it != node.metadata.end()) {
    const std::string& list = it->second;
    if (list.empty()) {
      errors.push_back(channels_key + " is an empty string");
    } else {
      std::vector<std::string_view> parts = Split(list, ',');
      for (size_t i = parts.size(); i-- > 0;) {
        if (parts[i].empty()) errors.push_back(fmt::format("{} entry {} is an empty string: \"{}\"", channels_key, i, list));
      }
      for (std::string_view part : parts) {
        if (!part.empty()) release.channels.emplace_back(part);
      }
      if (release.channels.empty()) errors.push_back(fmt::format("no non-empty channels in {} \"{}\"", channels_key, list));
      std::sort(release.channels.begin(), release.channels.end());
    }
  } else {
    not_string(channels_key, channels_key);
  }
  if (!errors.empty()) {
    std::string message = errors.front();
    for (size_t i = 1; i < errors.size(); ++i) message += "\n" + errors[i];
    return Status::InvalidArgument(std::move(message));
  }
  return release;
}

UpdatesOrFailure ComputeAvailableUpdates(const UpdateGraph& graph, const UpdatesQuery& query,
                                         std::string_view channel) {
  const std::string current_text = query.current_version.ToString();
  size_t current = graph.nodes.size();
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (graph.nodes[i].version == query.current_version) {
      current = i;
      break;
    }
  }
  if (current == graph.nodes.size()) {
    return Failure(reason::kVersionNotFound,
                   fmt::format("currently reconciling cluster version {} not found in the \"{}\" channel",
                               current_text, channel));
  }
  auto node_release = [&](size_t index, std::string_view what) -> Result<Release> {
    auto release = ReleaseFromNode(graph.nodes[index]);
    if (!release.ok()) return Status::InvalidArgument(fmt::format("invalid {} node: {}", what, release.status().message()));
    return release;
  };

  UpdatesOrFailure out;
  auto current_release = node_release(current, "current");
  if (!current_release.ok()) return Failure(reason::kResponseInvalid, current_release.status().message());
  out.updates.current = std::move(current_release).value();
  std::map<std::string, Version> versions;  // display string -> version, for sorting
  versions[out.updates.current.version] = graph.nodes[current].version;

  // Multi-arch migration: the multi payload of the running version is the only update.
  if (query.desired_multi && !query.current_multi) {
    out.updates.recommended.push_back(out.updates.current);
    return out;
  }

  for (const auto& [from, to] : graph.edges) {
    if (from != current) continue;
    auto release = node_release(to, "recommended update");
    if (!release.ok()) return Failure(reason::kResponseInvalid, release.status().message());
    versions[release->version] = graph.nodes[to].version;
    out.updates.recommended.push_back(std::move(release).value());
  }

  for (const auto& set : graph.conditional_edges) {
    for (const auto& edge : set.edges) {
      if (edge.first != current_text) continue;
      const std::string& to = edge.second;  // a named reference: clang cannot capture bindings
      auto target = std::find_if(graph.nodes.begin(), graph.nodes.end(),
                                 [&](const UpdateNode& n) { return n.version.ToString() == to; });
      if (target == graph.nodes.end()) {
        return Failure(reason::kResponseInvalid, fmt::format("no node for conditional update {}", to));
      }
      auto release = node_release(static_cast<size_t>(target - graph.nodes.begin()), "conditional update");
      if (!release.ok()) return Failure(reason::kResponseInvalid, release.status().message());
      versions[release->version] = target->version;
      out.updates.conditional.push_back({std::move(release).value(), set.risks});
    }
  }

  // Steps 5-7 of C5, in the CVO's order: the recommended copy of a conditional image
  // goes first, then unusable rules (and updates left with a rule-less risk), then
  // images with more than one conditional update.
  auto& conditional = out.updates.conditional;
  auto& recommended = out.updates.recommended;
  std::erase_if(recommended, [&](const Release& r) {
    return std::any_of(conditional.begin(), conditional.end(),
                       [&](const ConditionalUpdate& u) { return u.release.image == r.image; });
  });
  for (auto& update : conditional) {
    for (auto& risk : update.risks) std::erase_if(risk.matching_rules, [](const MatchingRule& r) { return !RuleIsUsable(r); });
  }
  std::erase_if(conditional, [](const ConditionalUpdate& u) {
    return std::any_of(u.risks.begin(), u.risks.end(), [](const Risk& r) { return r.matching_rules.empty(); });
  });
  std::map<std::string, int> per_image;
  for (const auto& update : conditional) ++per_image[update.release.image];
  std::erase_if(conditional, [&](const ConditionalUpdate& u) { return per_image[u.release.image] > 1; });

  SortDescending(recommended, versions);
  std::stable_sort(conditional.begin(), conditional.end(), [&](const ConditionalUpdate& a, const ConditionalUpdate& b) {
    return versions.at(b.release.version) < versions.at(a.release.version);
  });
  return out;
}

}  // namespace cincinnati::agent
