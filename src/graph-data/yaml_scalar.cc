#include "graph-data/yaml_scalar.h"

#include "graph-data/yaml_document.h"

#include <fmt/format.h>

namespace cincinnati::graphdata {
namespace {

bool IsDigitIn(char c, char high) { return c >= '0' && c <= high; }
bool IsHex(char c) { return IsDigitIn(c, '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// `s` is one or more characters all passing `ok`.
template <typename Ok>
bool AllOf(std::string_view s, Ok ok) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!ok(c)) return false;
  }
  return true;
}

std::string_view WithoutSign(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return s;
}

// [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+
bool IsInt(std::string_view s) {
  if (AllOf(WithoutSign(s), [](char c) { return IsDigitIn(c, '9'); })) return true;
  if (s.size() > 2 && s[0] == '0' && s[1] == 'o') return AllOf(s.substr(2), [](char c) { return IsDigitIn(c, '7'); });
  if (s.size() > 2 && s[0] == '0' && s[1] == 'x') return AllOf(s.substr(2), IsHex);
  return false;
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? | [-+]?\.(inf|Inf|INF) | \.(nan|NaN|NAN)
bool IsFloat(std::string_view s) {
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return true;
  std::string_view t = WithoutSign(s);
  if (t == ".inf" || t == ".Inf" || t == ".INF") return true;
  size_t i = 0, integer = 0, fraction = 0;
  while (i < t.size() && IsDigitIn(t[i], '9')) ++i, ++integer;
  bool dot = i < t.size() && t[i] == '.';
  if (dot) {
    ++i;
    while (i < t.size() && IsDigitIn(t[i], '9')) ++i, ++fraction;
  }
  if (integer == 0 && fraction == 0) return false;  // "." alone, or ".": no digits
  if (i == t.size()) return true;
  if (t[i] != 'e' && t[i] != 'E') return false;
  return AllOf(WithoutSign(t.substr(i + 1)), [](char c) { return IsDigitIn(c, '9'); });
}

}  // namespace

// Hand-written: these run for every plain scalar a decoder reads, and four RE2
// matches each were a tenth of loading graph-data.
PlainKind ResolvePlain(std::string_view s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return PlainKind::kNull;
  if (s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE") return PlainKind::kBool;
  if (IsInt(s)) return PlainKind::kInt;
  if (IsFloat(s)) return PlainKind::kFloat;
  return PlainKind::kString;
}

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
