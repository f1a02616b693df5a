#include "graph_client/available_updates.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/metadata_keys.h"
#include "core/strings.h"

namespace cincinnati::graph_client {
namespace {

namespace reason = retrieval_reason;

bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// Pruning of risks: only registered, well-formed rules stay.
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

// What the agent would keep of an answer, counted against KeptLimits before anything is
// copied: the size of each field, the risks of an update, and the bytes of everything
// kept (releases with their channels, risks with their rules), the current release
// included since its URL and channels fill status.desired.
class KeptBudget {
 public:
  explicit KeptBudget(const KeptLimits& limits) : limits_(limits) {}

  Status AddRelease(const Release& r, std::string_view what) {
    const std::string who = fmt::format("{} {}", what, Abbreviate(r.version, 64));
    CINCINNATI_RETURN_IF_ERROR(Field(who, "version", r.version));
    CINCINNATI_RETURN_IF_ERROR(Field(who, "image", r.image));
    CINCINNATI_RETURN_IF_ERROR(Field(who, "url", r.url));
    size_t bytes = 64 + r.version.size() + r.image.size() + r.url.size();
    for (const auto& c : r.channels) {
      CINCINNATI_RETURN_IF_ERROR(Field(who, "channel", c));
      bytes += c.size() + 4;
    }
    return Charge(bytes);
  }

  Status AddRisks(const std::vector<Risk>& risks, std::string_view what) {
    if (risks.size() > limits_.max_risks_per_update) {
      return Status::TooLarge(fmt::format("{}: {} risks, more than the {} the agent keeps for one update", what,
                                          risks.size(), limits_.max_risks_per_update));
    }
    size_t bytes = 0;
    for (const Risk& r : risks) {
      for (std::string_view field : {std::string_view(r.url), std::string_view(r.name), std::string_view(r.message)}) {
        if (field.size() > limits_.max_field_bytes) {
          return Status::TooLarge(fmt::format("{}: risk {} has a field of {} bytes, more than the {} the agent keeps", what,
                                              Abbreviate(r.name, 64), field.size(), limits_.max_field_bytes));
        }
      }
      bytes += 64 + r.url.size() + r.name.size() + r.message.size();
      for (const MatchingRule& rule : r.matching_rules) {
        const size_t query = rule.promql ? rule.promql->size() : 0;
        if (query > limits_.max_field_bytes) {
          return Status::TooLarge(fmt::format("{}: risk {} has a PromQL query of {} bytes, more than the {} the agent keeps",
                                              what, Abbreviate(r.name, 64), query, limits_.max_field_bytes));
        }
        bytes += 32 + rule.type.size() + query;
      }
    }
    return Charge(bytes);
  }

 private:
  Status Field(const std::string& who, std::string_view field, std::string_view value) {
    if (value.size() <= limits_.max_field_bytes) return Status::OK();
    return Status::TooLarge(fmt::format("{}: its {} is {} bytes, more than the {} the agent keeps", who, field,
                                        value.size(), limits_.max_field_bytes));
  }
  Status Charge(size_t bytes) {
    bytes_ += bytes;
    if (bytes_ <= limits_.max_kept_bytes) return Status::OK();
    return Status::TooLarge(fmt::format("more than {} bytes of updates and risks, the most the agent keeps",
                                        limits_.max_kept_bytes));
  }

  const KeptLimits& limits_;
  size_t bytes_ = 0;
};

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

namespace {

// The node's channels list, sorted, its empty entries named in `errors` (a few of them).
void ReadChannels(const std::string& channels_key, const std::string& list, Release& release,
                  std::vector<std::string>& errors) {
  if (list.empty()) {
    errors.push_back(channels_key + " is an empty string");
    return;
  }
  std::vector<std::string_view> parts = Split(list, ',');
  // The CVO names every empty entry; a few are named here, each quoting the list
  // shortened, so that a hostile list cannot make the message grow as its square.
  size_t named = 0, empty = 0;
  for (size_t i = parts.size(); i-- > 0;) {
    if (!parts[i].empty()) continue;
    ++empty;
    if (named++ < 3) {
      errors.push_back(fmt::format("{} entry {} is an empty string: \"{}\"", channels_key, i, Abbreviate(list, 256)));
    }
  }
  if (empty > named) errors.push_back(fmt::format("{} more empty entries", empty - named));
  for (std::string_view part : parts) {
    if (!part.empty()) release.channels.emplace_back(part);
  }
  if (release.channels.empty()) {
    errors.push_back(fmt::format("no non-empty channels in {} \"{}\"", channels_key, Abbreviate(list, 256)));
  }
  std::sort(release.channels.begin(), release.channels.end());
}

}  // namespace

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
      errors.push_back(fmt::format("invalid release URL: parse \"{}\": invalid URL", Abbreviate(it->second, 256)));
    }
  } else {
    not_string("url", "URL");
  }
  const std::string arch_key(kReleaseArchitectureKey);
  if (auto it = node.metadata.find(arch_key); it != node.metadata.end()) {
    if (it->second == "multi") {
      release.multi_architecture = true;
    } else {
      errors.push_back(fmt::format("unrecognized {} value \"{}\"", arch_key, Abbreviate(it->second, 256)));
    }
  } else {
    not_string(arch_key, arch_key);
  }
  const std::string channels_key = PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix);
  if (auto it = node.metadata.find(channels_key); it != node.metadata.end()) {
    ReadChannels(channels_key, it->second, release, errors);
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

namespace {

// A conditional update as found: its entry in the graph's conditional edges and its node.
struct Candidate {
  size_t set;
  size_t node;
};

// The updates from one node of a graph, read as the CVO reads them. Every error of the
// answer (kResponseInvalid) is a Status whose message the failure carries.
class UpdatesReader {
 public:
  UpdatesReader(const UpdateGraph& graph, size_t current) : graph_(graph), current_(current) {}

  // Each node's metadata is read once, however many edges lead to it; its version is kept
  // for sorting.
  Result<Release> NodeRelease(size_t index, std::string_view what) {
    if (auto it = releases_.find(index); it != releases_.end()) return it->second;
    auto release = ReleaseFromNode(graph_.nodes[index]);
    if (!release.ok()) return Status::InvalidArgument(fmt::format("invalid {} node: {}", what, release.status().message()));
    releases_.emplace(index, *release);
    versions_[release->version] = graph_.nodes[index].version;
    return release;
  }
  const Release& release(size_t index) const { return releases_.at(index); }

  // The targets of the current node's edges, each once, in the order of the edges.
  Status AddRecommended(std::vector<Release>& recommended) {
    std::vector<size_t> targets;
    std::vector<bool> seen(graph_.nodes.size(), false);
    for (const auto& [from, to] : graph_.edges) {
      if (from != current_ || seen[to]) continue;
      seen[to] = true;
      targets.push_back(to);
    }
    for (size_t to : targets) {
      CINCINNATI_ASSIGN_OR_RETURN(Release release, NodeRelease(to, "recommended update"));
      recommended.push_back(std::move(release));
    }
    return Status::OK();
  }

  // Conditional updates: (entry, node) pairs, the node found by its exact version string
  // (the first such node, as the CVO's search finds it).
  Result<std::vector<Candidate>> FindConditional(const std::string& current_text) {
    std::vector<Candidate> candidates;
    std::unordered_map<std::string, size_t> by_version;
    for (size_t s = 0; s < graph_.conditional_edges.size(); ++s) {
      for (const auto& [from, to] : graph_.conditional_edges[s].edges) {
        if (from != current_text) continue;
        if (by_version.empty()) {
          for (size_t i = graph_.nodes.size(); i-- > 0;) by_version[graph_.nodes[i].version.ToString()] = i;
        }
        auto target = by_version.find(to);
        if (target == by_version.end()) return Status::InvalidArgument(fmt::format("no node for conditional update {}", to));
        CINCINNATI_RETURN_IF_ERROR(NodeRelease(target->second, "conditional update").status());
        candidates.push_back({s, target->second});
      }
    }
    return candidates;
  }

  // The CVO's order: the recommended copy of a conditional image goes first, then
  // updates with a risk left without a usable rule, then images with more than one
  // conditional update; a recommended image is kept once.
  void Prune(std::vector<Release>& recommended, std::vector<Candidate>& candidates) const {
    std::unordered_set<std::string> conditional_images;
    for (const Candidate& c : candidates) conditional_images.insert(graph_.nodes[c.node].payload);
    std::erase_if(recommended, [&](const Release& r) { return conditional_images.count(r.image) > 0; });
    auto usable = [&](size_t set) {
      const auto& risks = graph_.conditional_edges[set].risks;
      return std::all_of(risks.begin(), risks.end(), [](const Risk& r) {
        return std::any_of(r.matching_rules.begin(), r.matching_rules.end(), RuleIsUsable);
      });
    };
    std::erase_if(candidates, [&](const Candidate& c) { return !usable(c.set); });
    std::unordered_map<std::string, int> per_image;
    for (const Candidate& c : candidates) ++per_image[graph_.nodes[c.node].payload];
    std::erase_if(candidates, [&](const Candidate& c) { return per_image[graph_.nodes[c.node].payload] > 1; });
    std::unordered_set<std::string> recommended_images;  // one entry per image
    std::erase_if(recommended, [&](const Release& r) { return !recommended_images.insert(r.image).second; });
  }

  // Whether the agent can keep all the updates (KeptLimits), the current release already
  // charged to `budget`.
  Status CheckKept(const std::vector<Release>& recommended, const std::vector<Candidate>& candidates,
                   const std::string& current_text, const KeptLimits& limits, KeptBudget& budget) const {
    const size_t count = recommended.size() + candidates.size();
    if (count > limits.max_updates) {
      return Status::TooLarge(fmt::format("updates from {}: the answer offers {} updates, more than the {} the agent keeps",
                                          current_text, count, limits.max_updates));
    }
    for (const Release& r : recommended) {
      if (Status kept = budget.AddRelease(r, "recommended update"); !kept.ok()) {
        return Status::TooLarge(fmt::format("updates from {}: {}", current_text, kept.message()));
      }
    }
    for (const Candidate& c : candidates) {
      const Release& release = releases_.at(c.node);
      Status kept = budget.AddRelease(release, "conditional update");
      if (kept.ok()) kept = budget.AddRisks(graph_.conditional_edges[c.set].risks, "conditional update " + release.version);
      if (!kept.ok()) return Status::TooLarge(fmt::format("updates from {}: {}", current_text, kept.message()));
    }
    return Status::OK();
  }

  // The conditional updates with only their usable rules, and both lists newest first.
  void Finish(AvailableUpdates& updates, const std::vector<Candidate>& candidates) const {
    auto& conditional = updates.conditional;
    for (const Candidate& c : candidates) {
      ConditionalUpdate update{releases_.at(c.node), graph_.conditional_edges[c.set].risks};
      for (auto& risk : update.risks) std::erase_if(risk.matching_rules, [](const MatchingRule& r) { return !RuleIsUsable(r); });
      conditional.push_back(std::move(update));
    }
    SortDescending(updates.recommended, versions_);
    std::stable_sort(conditional.begin(), conditional.end(), [&](const ConditionalUpdate& a, const ConditionalUpdate& b) {
      return versions_.at(b.release.version) < versions_.at(a.release.version);
    });
  }

 private:
  const UpdateGraph& graph_;
  const size_t current_;
  std::map<size_t, Release> releases_;
  std::map<std::string, Version> versions_;  // display string -> version, for sorting
};

}  // namespace

UpdatesOrFailure ComputeAvailableUpdates(const UpdateGraph& graph, const UpdatesQuery& query,
                                         std::string_view channel, const KeptLimits& limits) {
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
  UpdatesReader reader(graph, current);
  UpdatesOrFailure out;
  auto invalid = [](const Status& st) { return Failure(reason::kResponseInvalid, st.message()); };
  auto current_release = reader.NodeRelease(current, "current");
  if (!current_release.ok()) return invalid(current_release.status());
  out.updates.current = std::move(current_release).value();
  KeptBudget budget(limits);
  if (Status kept = budget.AddRelease(out.updates.current, "the current release"); !kept.ok()) return invalid(kept);

  // Multi-arch migration: the multi payload of the running version is the only update.
  if (query.desired_multi && !query.current_multi) {
    out.updates.recommended.push_back(out.updates.current);
    return out;
  }
  if (Status st = reader.AddRecommended(out.updates.recommended); !st.ok()) return invalid(st);
  auto candidates = reader.FindConditional(current_text);
  if (!candidates.ok()) return invalid(candidates.status());
  reader.Prune(out.updates.recommended, *candidates);
  if (Status st = reader.CheckKept(out.updates.recommended, *candidates, current_text, limits, budget); !st.ok()) {
    return invalid(st);
  }
  reader.Finish(out.updates, *candidates);
  return out;
}

}  // namespace cincinnati::graph_client
