#include "core/graph_records.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <boost/json.hpp>

#include "core/graph_json.h"
#include "core/internal_metadata.h"
#include "core/sha256.h"
#include "core/json.h"
#include "core/json_writer.h"

namespace cincinnati {
namespace {

Status Bad(std::string what) { return Status::InvalidArgument("graph records: " + std::move(what)); }

constexpr size_t kMaxQuoted = 100;

// Untrusted text in a message: quoted, escaped, cut.
std::string Quote(std::string_view text) {
  return text.size() <= kMaxQuoted ? JsonString(text) : JsonString(text.substr(0, kMaxQuoted)) + "...";
}

bool IsExplanationKey(std::string_view key, const RecordPrefixes& prefixes) {
  for (const std::string& prefix : prefixes) {
    for (std::string_view suffix : kExplanationSuffixes) {
      if (key.size() == prefix.size() + 1 + suffix.size() && key.starts_with(prefix) && key[prefix.size()] == '.' &&
          key.ends_with(suffix)) {
        return true;
      }
    }
  }
  return false;
}

bool IsSha256Hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<Metadata> ReadNodeRecords(std::string_view version, simdjson::dom::element keys, const RecordPrefixes& prefixes) {
  simdjson::dom::object entries;
  if (keys.get_object().get(entries)) return Bad(fmt::format("nodes.{}: expected an object", Quote(version)));
  Metadata metadata;
  for (auto [name, text] : entries) {
    std::string_view sv;
    if (!IsExplanationKey(name, prefixes)) {
      return Bad(fmt::format("nodes.{}: {} is not an explanation key", Quote(version), Quote(name)));
    }
    if (text.get_string().get(sv)) return Bad(fmt::format("nodes.{}.{}: expected a string", Quote(version), Quote(name)));
    if (!metadata.emplace(std::string(name), std::string(sv)).second) {
      return Bad(fmt::format("nodes.{}: {} is given twice", Quote(version), Quote(name)));
    }
  }
  if (metadata.empty()) return Bad(fmt::format("nodes.{}: no record", Quote(version)));
  for (const std::string& prefix : prefixes) {
    if (Status st = CheckInternalMetadata(metadata, prefix); !st.ok()) {
      return Bad(fmt::format("nodes.{}: {}", Quote(version), st.message()));
    }
  }
  return metadata;
}

}  // namespace

GraphRecords TakeGraphRecords(Graph& graph, const RecordPrefixes& prefixes) {
  GraphRecords records;
  for (NodeIndex i = 0; i < graph.node_count(); ++i) {
    Metadata& metadata = graph.mutable_metadata(i);
    Metadata taken;
    for (auto it = metadata.begin(); it != metadata.end();) {
      if (IsExplanationKey(it->first, prefixes)) {
        taken.insert(metadata.extract(it++));
      } else {
        ++it;
      }
    }
    if (!taken.empty()) records.nodes.emplace(graph.node(i).version, std::move(taken));
  }
  return records;
}

std::string WriteGraphRecordsJson(const GraphRecords& records) {
  boost::json::object nodes;
  for (const auto& [version, metadata] : records.nodes) {
    boost::json::object keys;
    for (const auto& [key, value] : metadata) keys[key] = value;
    nodes[version] = std::move(keys);
  }
  return WriteJson(boost::json::object{{"graph", records.graph_sha256}, {"nodes", std::move(nodes)}});
}

Result<GraphRecords> ReadGraphRecordsJson(std::string_view json, size_t max_nodes, const RecordPrefixes& prefixes) {
  if (json.size() > kMaxGraphRecordsBytes) {
    return Bad(fmt::format("the document is {} bytes, over the limit of {}", json.size(), kMaxGraphRecordsBytes));
  }
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(json.data(), json.size()).get(root)) {
    return Bad(fmt::format("invalid JSON: {}", simdjson::error_message(error)));
  }
  simdjson::dom::object top;
  if (root.get_object().get(top)) return Bad("expected an object");
  GraphRecords records;
  bool have_graph = false, have_nodes = false;
  for (auto [key, value] : top) {
    if (key == "graph") {
      std::string_view hash;
      if (have_graph) return Bad("graph: given twice");
      if (value.get_string().get(hash) || !IsSha256Hex(hash)) return Bad("graph: expected a SHA-256 in hex");
      records.graph_sha256 = std::string(hash);
      have_graph = true;
    } else if (key == "nodes") {
      simdjson::dom::object nodes;
      if (have_nodes) return Bad("nodes: given twice");
      if (value.get_object().get(nodes)) return Bad("nodes: expected an object");
      for (auto [version, keys] : nodes) {
        if (version.empty()) return Bad("nodes: an empty version");
        if (records.nodes.size() >= max_nodes) return Bad(fmt::format("nodes: more than {}", max_nodes));
        CINCINNATI_ASSIGN_OR_RETURN(Metadata metadata, ReadNodeRecords(version, keys, prefixes));
        if (!records.nodes.emplace(std::string(version), std::move(metadata)).second) {
          return Bad(fmt::format("nodes: {} is listed twice", Quote(version)));
        }
      }
      have_nodes = true;
    } else {
      return Bad(fmt::format("unknown key {}", Quote(key)));
    }
  }
  if (!have_graph) return Bad("graph: required");
  if (!have_nodes) return Bad("nodes: required");
  return records;
}

std::string WriteServedGraphJson(Graph& graph, GraphRecords* records, const RecordPrefixes& prefixes) {
  GraphRecords taken = TakeGraphRecords(graph, prefixes);
  std::string document = WriteGraphJson(graph);
  MergeGraphRecords(graph, taken);
  if (records) {
    taken.graph_sha256 = Sha256Hex(document);
    *records = std::move(taken);
  }
  return document;
}

size_t MergeGraphRecords(Graph& graph, const GraphRecords& records) {
  size_t skipped = 0;
  for (const auto& [version, metadata] : records.nodes) {
    auto i = graph.Find(version);
    if (!i) {
      ++skipped;
      continue;
    }
    Metadata& target = graph.mutable_metadata(*i);
    for (const auto& [key, value] : metadata) target.insert_or_assign(key, value);
  }
  return skipped;
}

}  // namespace cincinnati
