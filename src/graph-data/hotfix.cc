#include "graph-data/hotfix.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "graph-data/yaml_scalar.h"

namespace cincinnati::graphdata {
namespace {

Status CheckTokens(const std::vector<std::string>& items, const char* key) {
  for (const std::string& item : items) {
    if (!IsHotfixToken(item)) {
      return YamlError("", fmt::format("{}: '{}' is not a valid name (use letters, digits and ._:@/+-)", key, item));
    }
  }
  return Status::OK();
}

Result<Version> VersionAt(const YAML::Node& map, const char* key, const std::string& where) {
  CINCINNATI_ASSIGN_OR_RETURN(std::string text, YamlRequiredString(map, key, where));
  auto v = Version::Parse(text);
  if (!v.ok()) return YamlError(where, fmt::format("'{}': {}", key, v.status().message()));
  return std::move(v).value();
}

// Label selectors: each a non-empty map of label: value, both tokens (an empty value too).
Status ReadSelectors(const YAML::Node& doc, HotfixRule& rule) {
  const YAML::Node selectors = doc["selectors"];
  if (!selectors.IsDefined()) return Status::OK();
  if (!selectors.IsSequence()) return YamlError("", "'selectors' must be a list of label maps");
  for (size_t i = 0; i < selectors.size(); ++i) {
    std::string where = fmt::format("selectors[{}]", i);
    const YAML::Node s = selectors[i];
    if (!s.IsMap() || s.size() == 0) return YamlError(where, "expected a non-empty map of label: value");
    std::map<std::string, std::string> labels;
    for (const auto& kv : s) {
      std::string key = kv.first.as<std::string>("");
      auto value = YamlString(kv.second);
      if (!value) return YamlError(where, fmt::format("label '{}' must be a string, found {}", key, DescribeYaml(kv.second)));
      if (!IsHotfixToken(key) || (!value->empty() && !IsHotfixToken(*value))) {
        return YamlError(where, fmt::format("'{}: {}' is not a valid label (use letters, digits and ._:@/+-)", key, *value));
      }
      labels[key] = *value;
    }
    rule.selectors.push_back(std::move(labels));
  }
  return Status::OK();
}

// Extra edges: each touches one of the hotfix's releases (already read into `h`).
Status ReadEdges(const YAML::Node& doc, Hotfix& h) {
  const YAML::Node edges = doc["edges"];
  if (!edges.IsDefined()) return Status::OK();
  if (!edges.IsSequence()) return YamlError("", "'edges' must be a list of {from, to}");
  for (size_t i = 0; i < edges.size(); ++i) {
    std::string where = fmt::format("edges[{}]", i);
    const YAML::Node e = edges[i];
    if (!e.IsMap()) return YamlError(where, fmt::format("expected a map, found {}", DescribeYaml(e)));
    CINCINNATI_RETURN_IF_ERROR(YamlOnlyKeys(e, where, {"from", "to"}));
    HotfixEdge edge;
    CINCINNATI_ASSIGN_OR_RETURN(edge.from, VersionAt(e, "from", where));
    CINCINNATI_ASSIGN_OR_RETURN(edge.to, VersionAt(e, "to", where));
    auto listed = [&](const Version& v) { return std::find(h.releases.begin(), h.releases.end(), v) != h.releases.end(); };
    if (!listed(edge.from) && !listed(edge.to)) {
      return YamlError(where, fmt::format("edge {} -> {} touches none of the hotfix's releases",
                                          edge.from.ToString(), edge.to.ToString()));
    }
    if (edge.from == edge.to) return YamlError(where, fmt::format("edge {} -> itself", edge.from.ToString()));
    h.edges.push_back(std::move(edge));
  }
  return Status::OK();
}

}  // namespace

Result<Hotfix> DecodeHotfix(const YAML::Node& doc, const std::string& default_name) {
  if (!doc.IsMap()) return YamlError("", fmt::format("expected a map at the top level, found {}", DescribeYaml(doc)));
  CINCINNATI_RETURN_IF_ERROR(YamlOnlyKeys(doc, "", {"name", "customers", "selectors", "channels", "releases", "edges"}));
  Hotfix h;
  h.rule.name = default_name;
  if (doc["name"].IsDefined()) {
    CINCINNATI_ASSIGN_OR_RETURN(h.rule.name, YamlRequiredString(doc, "name", ""));
  }
  if (!IsHotfixToken(h.rule.name)) {
    return YamlError("", fmt::format("name '{}' is not valid (use letters, digits and ._:@/+-)", h.rule.name));
  }
  CINCINNATI_ASSIGN_OR_RETURN(h.rule.customers, YamlStringList(doc, "customers", ""));
  CINCINNATI_RETURN_IF_ERROR(CheckTokens(h.rule.customers, "customers"));
  CINCINNATI_RETURN_IF_ERROR(ReadSelectors(doc, h.rule));
  if (h.rule.customers.empty() && h.rule.selectors.empty()) {
    return YamlError("", "names no 'customers' and no 'selectors': nobody would see it");
  }
  if (!doc["channels"].IsDefined()) return YamlError("", "missing key 'channels'");
  CINCINNATI_ASSIGN_OR_RETURN(h.rule.channels, YamlStringList(doc, "channels", ""));
  if (h.rule.channels.empty()) return YamlError("", "'channels' must not be empty");
  CINCINNATI_RETURN_IF_ERROR(CheckTokens(h.rule.channels, "channels"));
  if (!doc["releases"].IsDefined()) return YamlError("", "missing key 'releases'");
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<std::string> releases, YamlStringList(doc, "releases", ""));
  if (releases.empty()) return YamlError("", "'releases' must not be empty");
  for (size_t i = 0; i < releases.size(); ++i) {
    auto v = Version::Parse(releases[i]);
    if (!v.ok()) return YamlError(fmt::format("releases[{}]", i), v.status().message());
    h.releases.push_back(std::move(v).value());
  }
  CINCINNATI_RETURN_IF_ERROR(ReadEdges(doc, h));
  return h;
}

}  // namespace cincinnati::graphdata
