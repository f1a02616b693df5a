#include "graph-data/managing_file.h"

#include <set>

#include <fmt/format.h>

#include "graph-data/time_format.h"
#include "graph-data/yaml_scalar.h"

namespace cincinnati::graphdata {
namespace {

Result<ManagedChannel> DecodeChannelEntry(const YAML::Node& node, const std::string& where) {
  if (!node.IsMap()) return YamlError(where, fmt::format("expected a map, found {}", DescribeYaml(node)));
  CINCINNATI_RETURN_IF_ERROR(YamlOnlyKeys(node, where, {"name", "phasedRollouts", "target"}));
  ManagedChannel channel;
  CINCINNATI_ASSIGN_OR_RETURN(channel.name, YamlRequiredString(node, "name", where));
  if (channel.name.empty()) return YamlError(where, "'name' must not be empty");
  if (node["target"].IsDefined()) {
    CINCINNATI_ASSIGN_OR_RETURN(std::string text, YamlRequiredString(node, "target", where));
    auto v = Version::Parse(text);
    if (!v.ok()) return YamlError(where, v.status().message());
    channel.target = std::move(v).value();
  }
  const YAML::Node rules = node["phasedRollouts"];
  if (!rules.IsDefined()) return channel;
  if (!rules.IsSequence()) return YamlError(where, "'phasedRollouts' must be a list");
  std::set<std::string> criteria;
  for (size_t i = 0; i < rules.size(); ++i) {
    std::string at = fmt::format("{}.phasedRollouts[{}]", where, i);
    const YAML::Node r = rules[i];
    if (!r.IsMap()) return YamlError(at, fmt::format("expected a map, found {}", DescribeYaml(r)));
    CINCINNATI_RETURN_IF_ERROR(YamlOnlyKeys(r, at, {"duration", "fromVersion"}));
    PhasedRule rule;
    CINCINNATI_ASSIGN_OR_RETURN(std::string duration, YamlRequiredString(r, "duration", at));
    auto seconds = ParseDuration(duration);
    if (!seconds.ok()) return YamlError(at, seconds.status().message());
    rule.duration_seconds = *seconds;
    if (r["fromVersion"].IsDefined()) {
      CINCINNATI_ASSIGN_OR_RETURN(std::string from, YamlRequiredString(r, "fromVersion", at));
      rule.from_version = from;
    }
    std::string criterion = rule.from_version.value_or("(default)");
    if (!criteria.insert(criterion).second) {
      return YamlError(at, fmt::format("criterion {} appears twice in channel '{}'", criterion, channel.name));
    }
    channel.rules.push_back(std::move(rule));
  }
  return channel;
}

}  // namespace

Result<ManagingFile> DecodeManagingFile(const YAML::Node& doc) {
  if (!doc.IsMap()) return YamlError("", fmt::format("expected a map at the top level, found {}", DescribeYaml(doc)));
  CINCINNATI_RETURN_IF_ERROR(YamlOnlyKeys(doc, "", {"channels", "versions"}));
  ManagingFile file;
  const YAML::Node channels = doc["channels"];
  if (!channels.IsDefined()) return YamlError("", "missing key 'channels'");
  if (!channels.IsSequence() || channels.size() == 0) return YamlError("", "'channels' must be a non-empty list");
  std::set<std::string> names;
  for (size_t i = 0; i < channels.size(); ++i) {
    std::string where = fmt::format("channels[{}]", i);
    CINCINNATI_ASSIGN_OR_RETURN(ManagedChannel c, DecodeChannelEntry(channels[i], where));
    if (!names.insert(c.name).second) return YamlError(where, fmt::format("channel '{}' is listed twice", c.name));
    file.channels.push_back(std::move(c));
  }
  const YAML::Node versions = doc["versions"];
  if (versions.IsDefined()) {
    if (!versions.IsSequence()) return YamlError("", "'versions' must be a list");
    for (size_t i = 0; i < versions.size(); ++i) {
      std::string where = fmt::format("versions[{}]", i);
      const YAML::Node v = versions[i];
      if (!v.IsMap()) return YamlError(where, fmt::format("expected a map, found {}", DescribeYaml(v)));
      CINCINNATI_RETURN_IF_ERROR(YamlOnlyKeys(v, where, {"name", "start", "locked"}));
      VersionStart entry;
      CINCINNATI_ASSIGN_OR_RETURN(std::string name, YamlRequiredString(v, "name", where));
      auto version = Version::Parse(name);
      if (!version.ok()) return YamlError(where, version.status().message());
      entry.version = std::move(version).value();
      CINCINNATI_ASSIGN_OR_RETURN(std::string start, YamlRequiredString(v, "start", where));
      auto t = ParseDateTime(start);
      if (!t.ok()) return YamlError(where, t.status().message());
      entry.start = *t;
      if (v["locked"].IsDefined()) {
        if (!v["locked"].IsScalar() || (v["locked"].Scalar() != "true" && v["locked"].Scalar() != "false")) {
          return YamlError(where, "'locked' must be true or false");
        }
        entry.locked = v["locked"].Scalar() == "true";
      }
      file.versions.push_back(std::move(entry));
    }
  }
  for (size_t i = 0; i < file.channels.size(); ++i) {
    const auto& target = file.channels[i].target;
    if (!target) continue;
    bool listed = false;
    for (const VersionStart& v : file.versions) listed |= v.version == *target;
    if (!listed) {
      return YamlError(fmt::format("channels[{}]", i), fmt::format("target {} is not one of the file's versions", target->ToString()));
    }
  }
  return file;
}

}  // namespace cincinnati::graphdata
