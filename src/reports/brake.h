// Brake: an update edge the graph builder stopped offering to everyone at once, because
// its clusters' reports crossed the brake rule (brake_rule.h), and how it shows in the
// served graph.
//
// A brake is exactly what a graph-data conditional blocked-edges file with the matching
// rule Always would do: ApplyBrakes turns every edge F -> N of the graph whose versions
// are `from` and `to` before any "+build" (every arch) into a conditional edge carrying
// the brake's risk, after the risks it already had (an edge stays in one group, as the
// builder's own step groups them), and leaves on N the records the builder's step
// leaves (blocked.by, previous.remove_regex, removed.previous), so that `explain` names
// the file as it names a committed one. The risk's name is per edge
// (AutomaticallyBlocked_4_13_1_to_4_13_2): the CVO keeps one definition per risk name,
// and graph-data's checks want files that share a name to share their message.
// BrakeFileYaml is the file a person reviews and commits: graph-data 1.1.0's shape,
// with the evidence in comments (the schema allows no other keys). Pure; never throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"

namespace cincinnati::reports {

struct Brake {
  std::string from, to;  // versions, without "+build"
  std::string url;       // the risk's (https://... for graph-data's checks)
  std::string message;   // the risk's: how many failed, on what, since when
  std::string comment;   // evidence for the file's reader (counts per component, who confirmed)
  bool operator==(const Brake&) const = default;
};

std::string BrakeRiskName(std::string_view from, std::string_view to);
// "blocked-edges/<to>-<risk name>.yaml": graph-data wants the name to start with `to`.
std::string BrakeFileName(std::string_view from, std::string_view to);
// The `from` regular expression of the brake's file: the version, any build.
std::string BrakeFromRegex(std::string_view from);
// The file graph-data's `check` passes as written: the URL should start with https://
// (BrakeBoard::Open refuses another url_base), and every text is YamlLineSafe.
std::string BrakeFileYaml(const Brake& brake);
// `text` with every character that a YAML reader takes for a line break (CR, NEL, the
// line and paragraph separators) or refuses (other control characters, bytes that are
// not UTF-8, as U+FFFD) replaced, so that it stays on the lines it is written on; '\n' and tabs kept.
std::string YamlLineSafe(std::string_view text);

// Applies the brakes to a built graph; returns how many edges became conditional.
// `key_prefix`: the graph's metadata key prefix (for blocked.by).
size_t ApplyBrakes(Graph& graph, const std::vector<Brake>& brakes, std::string_view key_prefix);

}  // namespace cincinnati::reports
