// Strict YAML reading for graph-data: one document, parsed by libyaml's event parser
// and built into a yaml-cpp node tree (which the typed decoders read).
//
// Why not YAML::Load: yaml-cpp accepts input that a YAML 1.2 parser rejects (an
// unterminated quoted scalar runs to the end of the file, duplicate keys silently
// keep one value), so a broken blocked-edges file could vanish without an error.
// Here every such input is an error naming line and column (1-based):
//   - syntax errors libyaml reports (unterminated quotes, tabs in indentation,
//     trailing garbage, bad indentation...);
//   - duplicate keys in a mapping;
//   - more than one document in the file;
//   - an alias to an unknown anchor, or aliases that expand past a bound
//     (no "billion laughs"); nesting deeper than a bound.
// An empty file is a null document. Scalars keep yaml-cpp's tags: "?" for plain,
// "!" for quoted and block scalars, the resolved tag for explicit ones; plain
// null spellings (~, null, empty) become null nodes, as YAML::Load makes them.
//
// Total: never throws; thread-safe (no shared state).
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/status.h"

namespace cincinnati::graphdata {

Result<YAML::Node> ParseStrictYaml(const std::string& content);

// Every document of a multi-document stream ("---" separated; Kubernetes manifests), with
// the same rules per document; anchors do not cross documents. An empty stream is one
// null document.
Result<std::vector<YAML::Node>> ParseStrictYamlDocuments(const std::string& content);

}  // namespace cincinnati::graphdata
