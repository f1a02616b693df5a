#include "graph-data/yaml_scalar.h"

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
    return YAML::Load(content);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(
        fmt::format("invalid YAML at line {}, column {}: {}", e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

}  // namespace cincinnati::graphdata
