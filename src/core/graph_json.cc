#include "core/graph_json.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "core/graph_json_layout.h"
#include "core/json_writer.h"

namespace cincinnati {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

void AppendRisk(std::string& out, const Risk& risk) {
  out += "{\"url\":";
  AppendJsonString(out, risk.url);
  out += ",\"name\":";
  AppendJsonString(out, risk.name);
  out += ",\"message\":";
  AppendJsonString(out, risk.message);
  out += ",\"matchingRules\":[";
  for (size_t i = 0; i < risk.matching_rules.size(); ++i) {
    const MatchingRule& rule = risk.matching_rules[i];
    if (i) out += ',';
    if (rule.type == MatchingRule::Type::kAlways) {
      out += "{\"type\":\"Always\"}";
      continue;
    }
    out += "{\"type\":\"PromQL\"";
    if (!rule.promql.empty()) {
      out += ",\"promql\":{\"promql\":";
      AppendJsonString(out, rule.promql);
      out += '}';
    }
    out += '}';
  }
  out += "]}";
}

// ---- reading ----

Status Bad(std::string what) { return Status::InvalidArgument(std::move(what)); }

Result<std::string> GetString(element e, std::string_view where) {
  std::string_view sv;
  if (e.get_string().get(sv)) return Bad(fmt::format("{}: expected a string", where));
  return std::string(sv);
}

// Optional string member with "" default, as the reference's conditional-edge structs.
Result<std::string> OptionalString(object o, std::string_view key, std::string_view where) {
  element e;
  if (o.at_key(key).get(e)) return std::string();
  return GetString(e, fmt::format("{}.{}", where, key));
}

Result<MatchingRule> ReadRule(element e, std::string_view where) {
  object o;
  if (e.get_object().get(o)) return Bad(fmt::format("{}: expected an object", where));
  CINCINNATI_ASSIGN_OR_RETURN(std::string type, OptionalString(o, "type", where));
  MatchingRule rule;
  if (type == "Always") return rule;
  if (type != "PromQL") return Bad(fmt::format("{}: unknown matching rule type '{}'", where, type));
  rule.type = MatchingRule::Type::kPromQL;
  object promql;
  if (!o["promql"].get(promql)) {
    CINCINNATI_ASSIGN_OR_RETURN(rule.promql, OptionalString(promql, "promql", fmt::format("{}.promql", where)));
  }
  return rule;
}

Result<Risk> ReadRisk(element e, std::string_view where) {
  object o;
  if (e.get_object().get(o)) return Bad(fmt::format("{}: expected an object", where));
  Risk risk;
  CINCINNATI_ASSIGN_OR_RETURN(risk.url, OptionalString(o, "url", where));
  CINCINNATI_ASSIGN_OR_RETURN(risk.name, OptionalString(o, "name", where));
  CINCINNATI_ASSIGN_OR_RETURN(risk.message, OptionalString(o, "message", where));
  array rules;
  if (!o["matchingRules"].get(rules)) {
    size_t i = 0;
    for (element r : rules) {
      CINCINNATI_ASSIGN_OR_RETURN(MatchingRule rule, ReadRule(r, fmt::format("{}.matchingRules[{}]", where, i++)));
      risk.matching_rules.push_back(std::move(rule));
    }
  }
  return risk;
}

Result<ConditionalEdge> ReadConditionalEdge(element e, std::string_view where) {
  object o;
  if (e.get_object().get(o)) return Bad(fmt::format("{}: expected an object", where));
  ConditionalEdge ce;
  array list;
  if (!o["edges"].get(list)) {
    size_t i = 0;
    for (element x : list) {
      std::string at = fmt::format("{}.edges[{}]", where, i++);
      object ref;
      if (x.get_object().get(ref)) return Bad(at + ": expected an object");
      ConditionalEdgeRef r;
      CINCINNATI_ASSIGN_OR_RETURN(r.from, OptionalString(ref, "from", at));
      CINCINNATI_ASSIGN_OR_RETURN(r.to, OptionalString(ref, "to", at));
      ce.edges.push_back(std::move(r));
    }
  }
  if (!o["risks"].get(list)) {
    size_t i = 0;
    for (element x : list) {
      CINCINNATI_ASSIGN_OR_RETURN(Risk risk, ReadRisk(x, fmt::format("{}.risks[{}]", where, i++)));
      ce.risks.push_back(std::move(risk));
    }
  }
  return ce;
}

Result<Node> ReadNode(element e, size_t index) {
  std::string where = fmt::format("nodes[{}]", index);
  object o;
  if (e.get_object().get(o)) return Bad(where + ": expected an object");
  element version, payload, metadata;
  if (o["version"].get(version)) return Bad(where + ": missing 'version'");
  CINCINNATI_ASSIGN_OR_RETURN(std::string v, GetString(version, where + ".version"));
  if (v.empty()) return Bad(where + ": empty 'version'");
  bool has_payload = !o["payload"].get(payload);
  bool has_metadata = !o["metadata"].get(metadata);
  if (!has_payload && !has_metadata) return Node::Abstract(std::move(v));
  if (has_payload != has_metadata) {
    return Bad(fmt::format("{} ('{}'): a release needs both 'payload' and 'metadata'", where, v));
  }
  CINCINNATI_ASSIGN_OR_RETURN(std::string p, GetString(payload, where + ".payload"));
  object md;
  if (metadata.get_object().get(md)) return Bad(fmt::format("{} ('{}'): 'metadata' must be an object", where, v));
  Metadata m;
  for (auto field : md) {
    std::string_view value;
    if (field.value.get_string().get(value)) {
      return Bad(fmt::format("{} ('{}'): metadata '{}' must be a string", where, v, field.key));
    }
    m.insert_or_assign(std::string(field.key), std::string(value));
  }
  return Node::Concrete(std::move(v), std::move(p), std::move(m));
}

}  // namespace

namespace {

void AppendConditionalEdge(std::string& out, const ConditionalEdge& ce, GraphJsonLayout::Group* layout) {
  if (layout) layout->whole.begin = out.size();
  out += "{\"edges\":[";
  for (size_t i = 0; i < ce.edges.size(); ++i) {
    if (i) out += ',';
    const size_t begin = out.size();
    out += "{\"from\":";
    AppendJsonString(out, ce.edges[i].from);
    out += ",\"to\":";
    AppendJsonString(out, ce.edges[i].to);
    out += '}';
    if (layout) layout->refs.push_back({begin, out.size()});
  }
  out += "],\"risks\":[";
  for (size_t i = 0; i < ce.risks.size(); ++i) {
    if (i) out += ',';
    AppendRisk(out, ce.risks[i]);
  }
  out += "]}";
  if (layout) layout->whole.end = out.size();
}

}  // namespace

void AppendConditionalEdgeJson(std::string& out, const ConditionalEdge& ce) { AppendConditionalEdge(out, ce, nullptr); }

std::string WriteGraphJson(const Graph& graph, const GraphJsonWriteOptions& options) {
  return WriteGraphJson(graph, options, nullptr);
}

std::string WriteGraphJson(const Graph& graph, const GraphJsonWriteOptions& options, GraphJsonLayout* layout) {
  std::string out;
  out.reserve(256 + graph.node_count() * 400 + graph.edge_count() * 12);
  out += '{';
  if (options.schema_version) {
    out += fmt::format("\"version\":{},", *options.schema_version);
  }
  out += "\"nodes\":[";
  for (size_t i = 0; i < graph.node_count(); ++i) {
    const Node& n = graph.node(static_cast<NodeIndex>(i));
    if (i) out += ',';
    out += "{\"version\":";
    AppendJsonString(out, n.version);
    if (n.concrete) {
      out += ",\"payload\":";
      AppendJsonString(out, n.payload);
      out += ",\"metadata\":{";
      bool first = true;
      for (const auto& [k, v] : n.metadata) {
        if (!first) out += ',';
        first = false;
        AppendJsonString(out, k);
        out += ':';
        AppendJsonString(out, v);
      }
      out += '}';
    }
    out += '}';
  }
  out += "],\"edges\":[";
  bool first = true;
  for (const Edge& e : graph.Edges()) {
    if (!first) out += ',';
    first = false;
    const size_t begin = out.size();
    out += '[';
    out += std::to_string(e.from);
    out += ',';
    out += std::to_string(e.to);
    out += ']';
    if (layout) layout->edges.push_back({begin, out.size()});
  }
  out += ']';
  if (graph.conditional_edges_present()) {
    out += ",\"conditionalEdges\":[";
    for (size_t i = 0; i < graph.conditional_edges().size(); ++i) {
      if (i) out += ',';
      AppendConditionalEdge(out, graph.conditional_edges()[i], layout ? &layout->groups.emplace_back() : nullptr);
    }
    out += ']';
  }
  out += '}';
  return out;
}

namespace {

// The members of a graph document's top-level object; any other key is an error.
struct TopLevel {
  element nodes, edges, conditional;
  bool has_nodes = false, has_edges = false, has_conditional = false, has_version = false;
};

Result<TopLevel> ReadTopLevel(object top, const GraphJsonReadOptions& options) {
  TopLevel t;
  for (auto field : top) {
    if (field.key == "nodes") {
      t.nodes = field.value, t.has_nodes = true;
    } else if (field.key == "edges") {
      t.edges = field.value, t.has_edges = true;
    } else if (field.key == "conditionalEdges") {
      t.conditional = field.value, t.has_conditional = true;
    } else if (field.key == "version" && options.allow_version_key) {
      uint64_t v;
      if (field.value.get_uint64().get(v)) return Bad("'version' must be a non-negative integer");
      t.has_version = true;
    } else {
      return Bad(fmt::format("unknown top-level key '{}'", field.key));
    }
  }
  if (!t.has_nodes) return Bad("missing 'nodes'");
  if (!t.has_edges) return Bad("missing 'edges'");
  return t;
}

Status ReadNodes(element nodes, Graph& graph) {
  array list;
  if (nodes.get_array().get(list)) return Bad("'nodes' must be an array");
  size_t index = 0;
  for (element e : list) {
    CINCINNATI_ASSIGN_OR_RETURN(Node node, ReadNode(e, index));
    auto added = graph.AddNode(std::move(node));
    if (!added.ok()) return added.status().WithContext(fmt::format("nodes[{}]", index));
    ++index;
  }
  return Status::OK();
}

// Edges as [from, to] pairs of indices into the nodes already read.
Status ReadEdges(element edges, Graph& graph) {
  array list;
  if (edges.get_array().get(list)) return Bad("'edges' must be an array");
  std::vector<Edge> edge_list;
  edge_list.reserve(list.size());
  size_t index = 0;
  for (element e : list) {
    array pair;
    uint64_t from, to;
    if (e.get_array().get(pair) || pair.size() != 2 || pair.at(0).get_uint64().get(from) ||
        pair.at(1).get_uint64().get(to)) {
      return Bad(fmt::format("edges[{}]: expected [from, to] with two node indices", index));
    }
    if (from >= graph.node_count() || to >= graph.node_count()) {
      return Bad(fmt::format("edges[{}]: [{}, {}] is out of range (graph has {} nodes)", index, from, to,
                             graph.node_count()));
    }
    edge_list.push_back(Edge{static_cast<NodeIndex>(from), static_cast<NodeIndex>(to)});
    ++index;
  }
  return graph.AddEdges(edge_list);
}

Status ReadConditionalEdges(element conditional, Graph& graph) {
  array list;
  if (conditional.get_array().get(list)) return Bad("'conditionalEdges' must be an array");
  size_t index = 0;
  for (element e : list) {
    CINCINNATI_ASSIGN_OR_RETURN(ConditionalEdge ce, ReadConditionalEdge(e, fmt::format("conditionalEdges[{}]", index++)));
    graph.mutable_conditional_edges().push_back(std::move(ce));
  }
  return Status::OK();
}

}  // namespace

Result<Graph> ReadGraphJson(std::string_view json, const GraphJsonReadOptions& options) {
  thread_local simdjson::dom::parser parser;
  simdjson::padded_string padded(json.data(), json.size());
  element doc;
  if (auto err = parser.parse(padded).get(doc)) {
    return Bad(fmt::format("invalid JSON: {}", simdjson::error_message(err)));
  }
  object top;
  if (doc.get_object().get(top)) return Bad("graph document must be a JSON object");
  CINCINNATI_ASSIGN_OR_RETURN(TopLevel t, ReadTopLevel(top, options));
  Graph graph;
  CINCINNATI_RETURN_IF_ERROR(ReadNodes(t.nodes, graph));
  CINCINNATI_RETURN_IF_ERROR(ReadEdges(t.edges, graph));
  graph.set_conditional_edges_present(t.has_conditional);
  graph.set_served_view(t.has_version);
  if (t.has_conditional) CINCINNATI_RETURN_IF_ERROR(ReadConditionalEdges(t.conditional, graph));
  return graph;
}

}  // namespace cincinnati
