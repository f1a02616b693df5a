// The graph builder's records of what it removed, kept apart from the graph it serves.
//
// The builder notes on a release which blocked-edges files and which edge or node
// removals took edges away from it (core/internal_metadata.h: blocked.by,
// removed.previous, removed.next). Explanations (`/v1/explain`, `/v1/path`, the graph
// page) need them; clients must never see them, and the graph document must stay the
// reference's byte for byte, because a reference policy engine rejects any other
// top-level key and passes node metadata on to every cluster. So the builder serves
// them as a document of their own, on the same URL as the graph, to a request that
// asks for kGraphRecordsMediaType; a reference graph builder answers that request
// with 406, which reads as "no records".
//
// The document: {"graph":"<SHA-256 hex of the graph document's bytes>",
//                "nodes":{"<version>":{"<prefix>.blocked.by":"...",...},...}}
// `graph` ties the records to one graph: a policy engine merges them only into the
// graph whose bytes hash to it (the builder may refresh between the two requests).
//
// Reading is total: a body over the cap, bad JSON, another top-level key, a key given
// twice, a key that is not an explanation key, a value that does not decode, an empty
// node or version, or more nodes than `max_nodes` is an error naming it (untrusted text
// in messages is quoted and cut at 100 bytes). Memory: the parser's (about 15 times the
// body, as for the graph itself) plus the records, linear in it.
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/metadata_keys.h"
#include "core/status.h"

namespace cincinnati {

inline constexpr std::string_view kGraphRecordsMediaType = "application/vnd.cincinnati.graph-records+json";
inline constexpr size_t kMaxGraphRecordsBytes = size_t{64} << 20;

struct GraphRecords {
  std::string graph_sha256;                 // of the graph document they belong to
  std::map<std::string, Metadata> nodes;    // version -> explanation keys and values
  bool empty() const { return nodes.empty(); }
};

// The key prefixes whose explanation keys are records: every prefix a graph builder's
// steps write with (their `key_prefix` settings), the default one included.
using RecordPrefixes = std::vector<std::string>;
inline RecordPrefixes DefaultRecordPrefixes() { return {std::string(kDefaultKeyPrefix)}; }

// Moves the explanation keys out of `graph` into the records (graph_sha256 is left
// for the caller, who serializes the graph).
GraphRecords TakeGraphRecords(Graph& graph, const RecordPrefixes& prefixes = DefaultRecordPrefixes());

std::string WriteGraphRecordsJson(const GraphRecords& records);
Result<GraphRecords> ReadGraphRecordsJson(std::string_view json, size_t max_nodes = SIZE_MAX,
                                          const RecordPrefixes& prefixes = DefaultRecordPrefixes());

// The document the graph builder serves for `graph`, which `graph build` prints too: the
// reference's graph document, without the records. They come out in `records` (with
// graph_sha256 set) when it is given; `graph` is as it was on return.
std::string WriteServedGraphJson(Graph& graph, GraphRecords* records = nullptr,
                                 const RecordPrefixes& prefixes = DefaultRecordPrefixes());

// Puts the records back on the nodes of `graph` with the same version; records of a
// version the graph does not have are skipped (counted in the result).
size_t MergeGraphRecords(Graph& graph, const GraphRecords& records);

}  // namespace cincinnati
