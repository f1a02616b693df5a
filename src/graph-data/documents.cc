#include "graph-data/documents.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>
#include <re2/re2.h>

#include "graph-data/yaml_scalar.h"

namespace cincinnati::graphdata {
namespace {

Status Bad(std::string m) { return Status::InvalidArgument(std::move(m)); }

Status RequireMap(const YAML::Node& doc) {
  if (!doc.IsMap()) return Bad(fmt::format("expected a map at the top level, found {}", DescribeYaml(doc)));
  return Status::OK();
}

Result<std::string> RequiredString(const YAML::Node& map, const char* key) {
  const YAML::Node value = map[key];
  if (!value.IsDefined()) return Bad(fmt::format("missing key '{}'", key));
  auto s = YamlString(value);
  if (!s) return Bad(fmt::format("'{}' must be a string, found {}", key, DescribeYaml(value)));
  return *s;
}

Result<Version> RequiredVersion(const YAML::Node& map, const char* key) {
  CINCINNATI_ASSIGN_OR_RETURN(std::string text, RequiredString(map, key));
  auto v = Version::Parse(text);
  if (!v.ok()) return v.status().WithContext(fmt::format("'{}'", key));
  return v;
}

Result<std::string> RequiredRegex(const YAML::Node& map, const char* key) {
  CINCINNATI_ASSIGN_OR_RETURN(std::string text, RequiredString(map, key));
  Status st = ValidateRegex(text);
  if (!st.ok()) return st.WithContext(fmt::format("'{}'", key));
  return text;
}

Result<MatchingRule> DecodeRule(const YAML::Node& node, size_t index) {
  std::string where = fmt::format("matchingRules[{}]", index);
  if (!node.IsMap()) return Bad(fmt::format("{}: expected a map, found {}", where, DescribeYaml(node)));
  auto type = RequiredString(node, "type");
  if (!type.ok()) return type.status().WithContext(where);
  MatchingRule rule;
  if (*type == "Always") return rule;
  if (*type != "PromQL") {
    return Bad(fmt::format("{}: unknown type '{}' (expected Always or PromQL)", where, *type));
  }
  rule.type = MatchingRule::Type::kPromQL;
  const YAML::Node promql = node["promql"];
  if (!promql.IsDefined()) return Bad(where + ": PromQL rule needs 'promql'");
  if (!promql.IsMap()) return Bad(fmt::format("{}.promql: expected a map, found {}", where, DescribeYaml(promql)));
  auto query = RequiredString(promql, "promql");
  if (!query.ok()) return query.status().WithContext(where + ".promql");
  rule.promql = std::move(query).value();
  return rule;
}

}  // namespace

Result<std::shared_ptr<const RE2>> CompileRegex(const std::string& pattern) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<const RE2>> compiled;
  constexpr size_t kMaxRemembered = 4096;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = compiled.find(pattern); it != compiled.end()) return it->second;
  }
  auto re = std::make_shared<const RE2>(pattern, RE2::Quiet);
  if (!re->ok()) return Bad(fmt::format("invalid regex '{}': {}", pattern, re->error()));
  std::lock_guard<std::mutex> lock(mu);
  if (compiled.size() >= kMaxRemembered) compiled.clear();  // holders keep theirs alive
  compiled.emplace(pattern, re);
  return std::shared_ptr<const RE2>(std::move(re));
}

Status ValidateRegex(const std::string& pattern) { return CompileRegex(pattern).status(); }

Result<ChannelDocument> DecodeChannel(const YAML::Node& doc) {
  CINCINNATI_RETURN_IF_ERROR(RequireMap(doc));
  ChannelDocument channel;
  CINCINNATI_ASSIGN_OR_RETURN(channel.name, RequiredString(doc, "name"));
  const YAML::Node versions = doc["versions"];
  if (!versions.IsDefined()) return Bad("missing key 'versions'");
  if (!versions.IsSequence()) return Bad(fmt::format("'versions' must be a list, found {}", DescribeYaml(versions)));
  for (size_t i = 0; i < versions.size(); ++i) {
    auto text = YamlString(versions[i]);
    if (!text) return Bad(fmt::format("versions[{}] must be a string, found {}", i, DescribeYaml(versions[i])));
    auto v = Version::Parse(*text);
    if (!v.ok()) return v.status().WithContext(fmt::format("versions[{}]", i));
    channel.versions.push_back(std::move(v).value());
  }
  if (const YAML::Node target = doc["target"]; target.IsDefined()) {
    channel.target_text = YamlString(target).value_or(target.IsScalar() ? target.Scalar() : "");
  }
  return channel;
}

Status ValidateChannelTarget(ChannelDocument& channel) {
  if (!channel.target_text) return Status::OK();
  auto v = Version::Parse(*channel.target_text);
  if (!v.ok()) return v.status().WithContext("'target'");
  if (std::find(channel.versions.begin(), channel.versions.end(), *v) == channel.versions.end()) {
    return Bad(fmt::format("target {} is not one of the channel's versions", v->ToString()));
  }
  channel.target = std::move(v).value();
  return Status::OK();
}

Result<UnconditionalBlock> DecodeUnconditionalBlock(const YAML::Node& doc) {
  CINCINNATI_RETURN_IF_ERROR(RequireMap(doc));
  for (const auto& kv : doc) {
    std::string key = kv.first.as<std::string>("");
    if (key != "to" && key != "from") return Bad(fmt::format("unknown key '{}'", key));
  }
  UnconditionalBlock block;
  CINCINNATI_ASSIGN_OR_RETURN(block.to, RequiredVersion(doc, "to"));
  CINCINNATI_ASSIGN_OR_RETURN(block.from, RequiredRegex(doc, "from"));
  return block;
}

Result<ConditionalBlock> DecodeConditionalBlock(const YAML::Node& doc) {
  CINCINNATI_RETURN_IF_ERROR(RequireMap(doc));
  ConditionalBlock block;
  CINCINNATI_ASSIGN_OR_RETURN(block.to, RequiredVersion(doc, "to"));
  CINCINNATI_ASSIGN_OR_RETURN(block.from, RequiredRegex(doc, "from"));
  CINCINNATI_ASSIGN_OR_RETURN(block.risk.url, RequiredString(doc, "url"));
  CINCINNATI_ASSIGN_OR_RETURN(block.risk.name, RequiredString(doc, "name"));
  CINCINNATI_ASSIGN_OR_RETURN(block.risk.message, RequiredString(doc, "message"));
  const YAML::Node rules = doc["matchingRules"];
  if (!rules.IsDefined()) return Bad("missing key 'matchingRules'");
  if (!rules.IsSequence()) return Bad(fmt::format("'matchingRules' must be a list, found {}", DescribeYaml(rules)));
  for (size_t i = 0; i < rules.size(); ++i) {
    CINCINNATI_ASSIGN_OR_RETURN(MatchingRule rule, DecodeRule(rules[i], i));
    block.risk.matching_rules.push_back(std::move(rule));
  }
  return block;
}

}  // namespace cincinnati::graphdata
