// The upgrade operator's fleet file (`--fleet`): the clusters it manages.
//
//   clusters:
//   - name: prod-1                       # lower-case letters, digits, '-' and '.'; 1 to 253; unique
//     agent: https://prod-1.example.com  # the agent's API: an http:// or https:// URL
//     tokenFile: /etc/fleet/prod-1       # optional
//     labels: {wave: canary}             # optional: a mapping of strings
//
// Read strictly, with libyaml's event parser and the rules of graph-data/yaml_document.h:
// a syntax error (a tab in the indentation, an unclosed quote...), a duplicate key, a
// second document, an alias naming no anchor before it, nesting deeper than 200 levels
// are errors naming line and column ("fleet.yaml: invalid YAML at line 3, column 1:
// ..."). The document is then read as kube/yaml_json.h reads one: a mapping key that is
// not a scalar, or nesting deeper than 64 levels, is an error; and as a fleet: an
// unknown key, a value of the wrong type, a bad or repeated name, or an agent that is not
// an http(s) URL is an error naming the cluster and the key ("fleet.yaml:
// clusters[3].agent: ..."). Scalars are typed by YAML 1.2's core schema: a plain `true`,
// `12` or `1.5` is not a string (quote it), a quoted or explicitly tagged scalar is; a
// plain null (~, null, empty) counts as absent for name, agent, tokenFile and labels, and
// is refused as a label's value. Of several faults one is reported, the first of: a parse
// error (the first in the file); a key that is not a scalar or too deep a nesting; a top
// level that is not a mapping, has an unknown key or no `clusters` list; the first
// faulty cluster's first fault (unknown key, types, name, repeated name, agent, labels).
//
// Anchors and aliases may stand for any node: a scalar, a shared `labels` mapping, a
// whole cluster. What the aliases stand for, pasted in (counted in bytes of the anchored
// text, aliases within it included), may be at most 4 times the file's size plus 64 KiB;
// past that the file is refused at the alias: "aliases expand to more than N bytes".
//
// Bounds. A file of at most kMaxFleetFileBytes (256 MiB) is read whatever its number of
// clusters: about 1,700,000 clusters of ~150 bytes each (an agent URL, a token file, two
// labels). No document tree is built: the clusters come from the parser's events, so
// memory is the file's text, plus the clusters returned (their strings, label maps, and
// the vector's spare capacity), plus 8 to 16 bytes a cluster of name index, plus what
// anchors keep (a log of their events, at most ~3 bytes a byte of their text, and ~50
// bytes an anchor). Measured (bench/RESULTS.md, "Fleet file", 2 cores): peak RSS = the
// text + ~510 bytes a cluster of that shape; 1,000,000 clusters (145 MiB of YAML): 630
// MiB, read in 2.4 s; a file at the limit of that shape: ~1.1 GiB. The worst case is a
// fleet of one-character labels: about 16 bytes of memory a byte of YAML, text included
// (~4 GiB for a file at the limit).
//
// Total: never throws; every error names `what` (the file).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace cincinnati::upgrade {

inline constexpr size_t kMaxFleetFileBytes = size_t{256} << 20;

struct FleetCluster {
  std::string name;
  std::string agent_url;
  std::string token_file;
  std::map<std::string, std::string> labels;
};

// `yaml` longer than kMaxFleetFileBytes is refused unread.
Result<std::vector<FleetCluster>> ParseFleet(const std::string& yaml, const std::string& what);
// A file over kMaxFleetFileBytes is refused before it is read, naming both sizes.
Result<std::vector<FleetCluster>> LoadFleet(const std::string& path);

}  // namespace cincinnati::upgrade
