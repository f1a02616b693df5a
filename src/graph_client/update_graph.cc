#include "graph_client/update_graph.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <cctype>
#include <cstdint>

#include "core/metadata_keys.h"

namespace cincinnati::graph_client {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

Status Bad(std::string message) { return Status::InvalidArgument(std::move(message)); }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// The value of `name` in `o` as Go's decoder picks it: an exact key if there is one,
// else the last key equal ignoring case. Absent: a null element is not returned.
std::optional<element> Field(const object& o, std::string_view name) {
  std::optional<element> folded;
  for (auto field : o) {
    if (field.key == name) return field.value;
    if (EqualsIgnoreCase(field.key, name)) folded = field.value;
  }
  return folded;
}

// A string member: absent or null reads as "", any other type is an error.
Result<std::string> StringField(const object& o, std::string_view name, const std::string& where) {
  auto value = Field(o, name);
  if (!value || value->is_null()) return std::string();
  std::string_view s;
  if (value->get_string().get(s)) return Bad(fmt::format("{}.{} must be a string", where, name));
  return std::string(s);
}

// An array member: absent or null reads as empty.
Result<std::optional<array>> ArrayField(const object& o, std::string_view name, const std::string& where) {
  auto value = Field(o, name);
  if (!value || value->is_null()) return std::optional<array>();
  array a;
  if (value->get_array().get(a)) return Bad(fmt::format("{}.{} must be an array", where, name));
  return std::optional<array>(a);
}

Result<object> ObjectAt(element e, const std::string& where) {
  object o;
  if (e.get_object().get(o)) return Bad(fmt::format("{} must be an object", where));
  return o;
}

// The node metadata keys the agent interprets (ReleaseFromNode); others are dropped.
bool InterpretedKey(std::string_view key) {
  static const std::string kChannels = PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix);
  return key == "url" || key == kReleaseArchitectureKey || key == kChannels;
}

// Counts what an answer makes the parser keep, against the limits.
struct Budget {
  const AnswerLimits& limits;
  size_t conditional_edges = 0, risks = 0, rules = 0;
  Status Take(size_t& used, size_t n, size_t limit, std::string_view what) {
    used += n;
    if (used > limit) return Bad(fmt::format("the answer has more than {} {}, the most the agent reads", limit, what));
    return Status::OK();
  }
};

Status CheckCount(size_t count, size_t limit, std::string_view what) {
  if (count > limit) return Bad(fmt::format("the answer has {} {}, more than the {} the agent reads", count, what, limit));
  return Status::OK();
}

Result<UpdateNode> ReadNode(element e, const std::string& where) {
  CINCINNATI_ASSIGN_OR_RETURN(object o, ObjectAt(e, where));
  UpdateNode node;
  CINCINNATI_ASSIGN_OR_RETURN(node.version_text, StringField(o, "version", where));
  auto version = Version::Parse(node.version_text);
  bool padded = !node.version_text.empty() &&
                (std::isspace(static_cast<unsigned char>(node.version_text.front())) ||
                 std::isspace(static_cast<unsigned char>(node.version_text.back())));
  if (!version.ok() || padded) {
    return Bad(fmt::format("{}.version: '{}' is not a SemVer version{}", where, node.version_text,
                           version.ok() ? "" : ": " + version.status().message()));
  }
  node.version = std::move(version).value();
  CINCINNATI_ASSIGN_OR_RETURN(node.payload, StringField(o, "payload", where));
  auto metadata = Field(o, "metadata");
  if (metadata && !metadata->is_null()) {
    CINCINNATI_ASSIGN_OR_RETURN(object m, ObjectAt(*metadata, where + ".metadata"));
    for (auto field : m) {
      if (!InterpretedKey(field.key)) continue;
      std::string_view value;
      if (field.value.get_string().get(value)) {
        std::string text = simdjson::minify(field.value);
        if (text.size() > 1024) text = text.substr(0, 1024) + "...";  // only ever quoted in an error
        node.non_string[std::string(field.key)] = std::move(text);
      } else {
        node.metadata[std::string(field.key)] = std::string(value);
      }
    }
  }
  return node;
}

// `index` names the edge in errors (edges[index]); the name is only formatted then:
// an answer may hold millions of edges.
Result<std::pair<size_t, size_t>> ReadEdge(element e, size_t node_count, size_t index) {
  array pair;
  if (e.get_array().get(pair) || pair.size() != 2) {
    return Bad(fmt::format("edges[{}] must be an array of two node indices", index));
  }
  size_t ends[2];
  size_t i = 0;
  for (element end : pair) {
    int64_t value;
    if (end.get_int64().get(value)) return Bad(fmt::format("edges[{}][{}] must be an integer", index, i));
    if (value < 0 || static_cast<uint64_t>(value) >= node_count) {
      return Bad(fmt::format("edges[{}][{}]: node index {} is out of range ({} nodes)", index, i, value, node_count));
    }
    ends[i++] = static_cast<size_t>(value);
  }
  return std::pair{ends[0], ends[1]};
}

Result<MatchingRule> ReadRule(element e, const std::string& where) {
  CINCINNATI_ASSIGN_OR_RETURN(object o, ObjectAt(e, where));
  MatchingRule rule;
  CINCINNATI_ASSIGN_OR_RETURN(rule.type, StringField(o, "type", where));
  auto promql = Field(o, "promql");
  if (promql && !promql->is_null()) {
    CINCINNATI_ASSIGN_OR_RETURN(object q, ObjectAt(*promql, where + ".promql"));
    CINCINNATI_ASSIGN_OR_RETURN(rule.promql, StringField(q, "promql", where + ".promql"));
  }
  return rule;
}

Result<Risk> ReadRisk(element e, const std::string& where, Budget& budget) {
  CINCINNATI_ASSIGN_OR_RETURN(object o, ObjectAt(e, where));
  Risk risk;
  CINCINNATI_ASSIGN_OR_RETURN(risk.url, StringField(o, "url", where));
  CINCINNATI_ASSIGN_OR_RETURN(risk.name, StringField(o, "name", where));
  CINCINNATI_ASSIGN_OR_RETURN(risk.message, StringField(o, "message", where));
  CINCINNATI_ASSIGN_OR_RETURN(auto rules, ArrayField(o, "matchingRules", where));
  if (rules) {
    CINCINNATI_RETURN_IF_ERROR(budget.Take(budget.rules, rules->size(), budget.limits.max_rules, "matching rules"));
    size_t i = 0;
    for (element r : *rules) {
      CINCINNATI_ASSIGN_OR_RETURN(MatchingRule rule, ReadRule(r, fmt::format("{}.matchingRules[{}]", where, i++)));
      risk.matching_rules.push_back(std::move(rule));
    }
  }
  return risk;
}

Result<ConditionalEdgeSet> ReadConditionalEdges(element e, const std::string& where, Budget& budget) {
  CINCINNATI_ASSIGN_OR_RETURN(object o, ObjectAt(e, where));
  ConditionalEdgeSet set;
  CINCINNATI_ASSIGN_OR_RETURN(auto edges, ArrayField(o, "edges", where));
  if (edges) {
    CINCINNATI_RETURN_IF_ERROR(
        budget.Take(budget.conditional_edges, edges->size(), budget.limits.max_conditional_edges, "conditional edges"));
    size_t i = 0;
    for (element edge : *edges) {
      std::string at = fmt::format("{}.edges[{}]", where, i++);
      CINCINNATI_ASSIGN_OR_RETURN(object eo, ObjectAt(edge, at));
      CINCINNATI_ASSIGN_OR_RETURN(std::string from, StringField(eo, "from", at));
      CINCINNATI_ASSIGN_OR_RETURN(std::string to, StringField(eo, "to", at));
      set.edges.emplace_back(std::move(from), std::move(to));
    }
  }
  CINCINNATI_ASSIGN_OR_RETURN(auto risks, ArrayField(o, "risks", where));
  if (risks) {
    CINCINNATI_RETURN_IF_ERROR(budget.Take(budget.risks, risks->size(), budget.limits.max_risks, "risks"));
    size_t i = 0;
    for (element risk : *risks) {
      CINCINNATI_ASSIGN_OR_RETURN(Risk r, ReadRisk(risk, fmt::format("{}.risks[{}]", where, i++), budget));
      set.risks.push_back(std::move(r));
    }
  }
  return set;
}

}  // namespace

Result<UpdateGraph> ParseUpdateGraph(std::string_view json, const AnswerLimits& limits) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json.data(), json.size());
  element doc;
  if (auto err = parser.parse(padded).get(doc)) {
    return Bad(fmt::format("invalid JSON: {}", simdjson::error_message(err)));
  }
  CINCINNATI_ASSIGN_OR_RETURN(object top, ObjectAt(doc, "the answer"));
  UpdateGraph graph;
  CINCINNATI_ASSIGN_OR_RETURN(auto nodes, ArrayField(top, "nodes", "graph"));
  if (nodes) {
    CINCINNATI_RETURN_IF_ERROR(CheckCount(nodes->size(), limits.max_nodes, "nodes"));
    graph.nodes.reserve(nodes->size());
    for (element n : *nodes) {
      CINCINNATI_ASSIGN_OR_RETURN(UpdateNode node, ReadNode(n, fmt::format("nodes[{}]", graph.nodes.size())));
      graph.nodes.push_back(std::move(node));
    }
  }
  CINCINNATI_ASSIGN_OR_RETURN(auto edges, ArrayField(top, "edges", "graph"));
  if (edges) {
    CINCINNATI_RETURN_IF_ERROR(CheckCount(edges->size(), limits.max_edges, "edges"));
    graph.edges.reserve(edges->size());
    for (element e : *edges) {
      CINCINNATI_ASSIGN_OR_RETURN(auto edge, ReadEdge(e, graph.nodes.size(), graph.edges.size()));
      graph.edges.push_back(edge);
    }
  }
  CINCINNATI_ASSIGN_OR_RETURN(auto conditional, ArrayField(top, "conditionalEdges", "graph"));
  if (conditional) {
    CINCINNATI_RETURN_IF_ERROR(CheckCount(conditional->size(), limits.max_conditional_edges, "conditionalEdges entries"));
    Budget budget{limits};
    for (element c : *conditional) {
      CINCINNATI_ASSIGN_OR_RETURN(
          ConditionalEdgeSet set,
          ReadConditionalEdges(c, fmt::format("conditionalEdges[{}]", graph.conditional_edges.size()), budget));
      graph.conditional_edges.push_back(std::move(set));
    }
  }
  return graph;
}

}  // namespace cincinnati::graph_client
