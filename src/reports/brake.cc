#include "reports/brake.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "core/internal_metadata.h"
#include "core/metadata_keys.h"
#include "core/strings.h"

namespace cincinnati::reports {
namespace {

std::string_view Base(std::string_view version) { return version.substr(0, version.find('+')); }

// `text` with every line `indent`ed; YAML line breaks other than '\n' and whatever a YAML
// reader refuses become spaces (YamlLineSafe), so that no text can end a comment or a
// block scalar early.
std::string Indented(std::string_view text, std::string_view indent) {
  const std::string safe = YamlLineSafe(text);
  std::string out;
  size_t start = 0;
  while (start <= safe.size()) {
    const size_t end = std::min(safe.find('\n', start), safe.size());
    out += indent;
    out.append(safe, start, end - start);
    out += '\n';
    start = end + 1;
  }
  return out;
}

Risk RiskOf(const Brake& brake) {
  return Risk{brake.url, BrakeRiskName(brake.from, brake.to), brake.message, {MatchingRule{MatchingRule::Type::kAlways, ""}}};
}

// Appends `value` to a `separator`-separated list kept in metadata, once.
void AppendOnce(Metadata& metadata, const std::string& key, const std::string& value, char separator) {
  auto [at, inserted] = metadata.try_emplace(key, value);
  if (inserted) return;
  for (std::string_view item : Split(at->second, separator)) {
    if (item == value) return;
  }
  at->second += separator + value;
}

// The edge into a group whose risks are exactly `risks`, or a new group.
void AddToGroup(std::vector<ConditionalEdge>& groups, ConditionalEdgeRef ref, const std::vector<Risk>& risks) {
  auto same = std::find_if(groups.begin(), groups.end(), [&](const ConditionalEdge& g) { return g.risks == risks; });
  if (same == groups.end()) {
    groups.push_back(ConditionalEdge{{std::move(ref)}, risks});
  } else {
    same->edges.push_back(std::move(ref));
  }
}

}  // namespace

std::string YamlLineSafe(std::string_view text) {
  std::string in(text);
  MakeValidUtf8(in);  // a YAML reader refuses a file that is not UTF-8
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const auto c = static_cast<unsigned char>(in[i]);
    const std::string_view rest = std::string_view(in).substr(i);
    // Line breaks to a YAML 1.1 reader, or characters it refuses: control characters but
    // line feed and tab, NEL and the other C1 controls (U+0080-U+009F), the line and
    // paragraph separators, and the non-characters U+FFFE and U+FFFF.
    size_t refused = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7F ? 1 : 0;
    if (c == 0xC2 && rest.size() > 1 && static_cast<unsigned char>(rest[1]) < 0xA0) refused = 2;
    for (std::string_view three : {"\xE2\x80\xA8", "\xE2\x80\xA9", "\xEF\xBF\xBE", "\xEF\xBF\xBF"}) {
      if (rest.starts_with(three)) refused = 3;
    }
    if (refused == 0) {
      out += in[i];
    } else {
      out += ' ';
      i += refused - 1;
    }
  }
  return out;
}

std::string BrakeRiskName(std::string_view from, std::string_view to) {
  std::string name = fmt::format("AutomaticallyBlocked_{}_to_{}", Base(from), Base(to));
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

std::string BrakeFileName(std::string_view from, std::string_view to) {
  return fmt::format("blocked-edges/{}-{}.yaml", Base(to), BrakeRiskName(from, to));
}

std::string BrakeFromRegex(std::string_view from) {
  std::string out = "^";
  for (char c : Base(from)) {
    if (c == '.') {
      out += "[.]";
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '-') {
      out += c;
    } else {
      out += fmt::format("\\{}", c);
    }
  }
  return out + "([+].*)?$";
}

std::string BrakeFileYaml(const Brake& brake) {
  std::string out = Indented(brake.comment, "# ");
  out += fmt::format("to: {}\nfrom: {}\nurl: {}\nname: {}\nmessage: |-\n", Base(brake.to), BrakeFromRegex(brake.from),
                     YamlLineSafe(brake.url), BrakeRiskName(brake.from, brake.to));
  out += Indented(brake.message, "  ");
  return out + "matchingRules:\n- type: Always\n";
}

size_t ApplyBrakes(Graph& graph, const std::vector<Brake>& brakes, std::string_view key_prefix) {
  if (brakes.empty()) return 0;
  std::map<std::string_view, std::vector<NodeIndex>> by_base;
  for (NodeIndex i = 0; i < graph.node_count(); ++i) by_base[Base(graph.node(i).version)].push_back(i);
  const std::string blocked_by_key = PrefixedKey(key_prefix, kBlockedBySuffix);
  const std::string remove_regex_key = PrefixedKey(key_prefix, kPreviousRemoveRegexSuffix);
  const std::string removed_key = PrefixedKey(key_prefix, kRemovedPreviousSuffix);
  std::vector<ConditionalEdge>& groups = graph.mutable_conditional_edges();
  size_t braked = 0;
  for (const Brake& brake : brakes) {
    auto targets = by_base.find(Base(brake.to));
    if (targets == by_base.end()) continue;
    const Risk risk = RiskOf(brake);
    auto matches = [&](const ConditionalEdgeRef& ref) { return Base(ref.from) == Base(brake.from) && Base(ref.to) == Base(brake.to); };
    // Conditional already: the edge leaves its group and joins one with the brake's risk added.
    std::vector<std::pair<ConditionalEdgeRef, std::vector<Risk>>> moved;
    for (ConditionalEdge& group : groups) {
      for (const ConditionalEdgeRef& ref : group.edges) {
        if (!matches(ref)) continue;
        std::vector<Risk> risks = group.risks;
        if (std::none_of(risks.begin(), risks.end(), [&](const Risk& r) { return r.name == risk.name; })) risks.push_back(risk);
        moved.push_back({ref, std::move(risks)});
      }
      std::erase_if(group.edges, matches);
    }
    std::erase_if(groups, [](const ConditionalEdge& g) { return g.edges.empty(); });
    for (NodeIndex to : targets->second) {
      // The records the builder's own step leaves: the file, its rule, and each edge it took.
      Metadata& metadata = graph.mutable_metadata(to);
      AppendOnce(metadata, blocked_by_key, EncodeBlockRecord({true, BrakeFileName(brake.from, brake.to), BrakeFromRegex(brake.from)}), ';');
      AppendOnce(metadata, remove_regex_key, BrakeFromRegex(brake.from), '|');
      const std::vector<NodeIndex> predecessors = graph.predecessors(to);  // copied: edges are removed below
      for (NodeIndex from : predecessors) {
        if (Base(graph.node(from).version) != Base(brake.from)) continue;
        graph.RemoveEdge(from, to);
        AppendOnce(graph.mutable_metadata(to), removed_key, EncodeRemovedEdge({graph.node(from).version, "previous.remove_regex"}), ',');
        moved.push_back({ConditionalEdgeRef{graph.node(from).version, graph.node(to).version}, {risk}});
      }
    }
    for (auto& [ref, risks] : moved) AddToGroup(groups, std::move(ref), risks);
    braked += moved.size();
  }
  if (braked > 0) graph.set_conditional_edges_present(true);
  return braked;
}

}  // namespace cincinnati::reports
