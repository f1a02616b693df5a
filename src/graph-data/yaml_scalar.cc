#include "graph-data/yaml_scalar.h"

#include "graph-data/yaml_document.h"

#include <fmt/format.h>
#include <re2/re2.h>

namespace cincinnati::graphdata {
namespace {

enum class PlainKind { kNull, kBool, kInt, kFloat, kString };

PlainKind ResolvePlain(const std::string& s) {
  static const RE2 kNull("~|null|Null|NULL|");
  static const RE2 kBool("true|True|TRUE|false|False|FALSE");
  static const RE2 kInt("[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+");
  static const RE2 kFloat(
      "[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)");
  if (RE2::FullMatch(s, kNull)) return PlainKind::kNull;
  if (RE2::FullMatch(s, kBool)) return PlainKind::kBool;
  if (RE2::FullMatch(s, kInt)) return PlainKind::kInt;
  if (RE2::FullMatch(s, kFloat)) return PlainKind::kFloat;
  return PlainKind::kString;
}

}  // namespace

std::optional<std::string> YamlString(const YAML::Node& node) {
  if (!node.IsDefined() || !node.IsScalar()) return std::nullopt;
  // yaml-cpp tags plain scalars "?" and quoted/block scalars "!".
  if (node.Tag() == "?" && ResolvePlain(node.Scalar()) != PlainKind::kString) return std::nullopt;
  return node.Scalar();
}

std::string DescribeYaml(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  if (node.Tag() != "?") return "a string";
  switch (ResolvePlain(node.Scalar())) {
    case PlainKind::kNull: return "null";
    case PlainKind::kBool: return "a boolean";
    case PlainKind::kInt: return "an integer";
    case PlainKind::kFloat: return "a float";
    case PlainKind::kString: return "a string";
  }
  return "a scalar";
}

Result<YAML::Node> ParseYaml(const std::string& content) {
  try {
    return ParseStrictYaml(content);
  } catch (const std::exception& e) {  // yaml-cpp node building; not expected
    return Status::InvalidArgument(fmt::format("invalid YAML: {}", e.what()));
  }
}

Status YamlError(const std::string& where, const std::string& why) {
  return Status::InvalidArgument(where.empty() ? why : where + ": " + why);
}

Status YamlOnlyKeys(const YAML::Node& map, const std::string& where, std::initializer_list<const char*> allowed) {
  for (const auto& kv : map) {
    std::string key = kv.first.as<std::string>("");
    bool ok = false;
    for (const char* a : allowed) ok |= key == a;
    if (!ok) return YamlError(where, fmt::format("unknown key '{}'", key));
  }
  return Status::OK();
}

Result<std::string> YamlRequiredString(const YAML::Node& map, const char* key, const std::string& where) {
  const YAML::Node v = map[key];
  if (!v.IsDefined()) return YamlError(where, fmt::format("missing key '{}'", key));
  auto s = YamlString(v);
  if (!s) return YamlError(where, fmt::format("'{}' must be a string, found {}", key, DescribeYaml(v)));
  return *s;
}

Result<std::vector<std::string>> YamlStringList(const YAML::Node& map, const char* key, const std::string& where) {
  std::vector<std::string> out;
  const YAML::Node list = map[key];
  if (!list.IsDefined()) return out;
  if (!list.IsSequence()) return YamlError(where, fmt::format("'{}' must be a list, found {}", key, DescribeYaml(list)));
  for (size_t i = 0; i < list.size(); ++i) {
    auto s = YamlString(list[i]);
    if (!s) return YamlError(where, fmt::format("{}[{}] must be a string, found {}", key, i, DescribeYaml(list[i])));
    out.push_back(std::move(*s));
  }
  return out;
}

}  // namespace cincinnati::graphdata
