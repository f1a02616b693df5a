#include "kube/yaml_json.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "graph-data/yaml_document.h"

namespace cincinnati::kube {
namespace {

constexpr int kMaxDepth = 64;

Result<JsonValue> NodeToJson(const YAML::Node& node, const std::string& what, int depth) {
  if (depth > kMaxDepth) return Status::InvalidArgument(what + ": nested too deeply");
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return JsonValue();
    case YAML::NodeType::Scalar:
      return node.Tag() == "?" ? PlainScalarToJson(node.Scalar()) : JsonValue(node.Scalar());
    case YAML::NodeType::Sequence: {
      JsonArray items;
      for (const auto& item : node) {
        CINCINNATI_ASSIGN_OR_RETURN(JsonValue v, NodeToJson(item, what, depth + 1));
        items.push_back(std::move(v));
      }
      return JsonValue(std::move(items));
    }
    case YAML::NodeType::Map: {
      JsonObject members;
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) return Status::InvalidArgument(what + ": a mapping key that is not a scalar");
        CINCINNATI_ASSIGN_OR_RETURN(JsonValue v, NodeToJson(kv.second, what, depth + 1));
        members.insert_or_assign(kv.first.Scalar(), std::move(v));  // a repeated key: the last wins
      }
      return JsonValue(std::move(members));
    }
  }
  return JsonValue();
}

}  // namespace

JsonValue PlainScalarToJson(const std::string& text) {
  static const RE2 kNull("null|Null|NULL|~|");
  static const RE2 kTrue("true|True|TRUE");
  static const RE2 kFalse("false|False|FALSE");
  static const RE2 kDecimal("[-+]?[0-9]+");
  static const RE2 kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (RE2::FullMatch(text, kNull)) return JsonValue();
  if (RE2::FullMatch(text, kTrue)) return JsonValue(true);
  if (RE2::FullMatch(text, kFalse)) return JsonValue(false);
  if (RE2::FullMatch(text, kDecimal)) {
    int64_t n = 0;
    const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
    auto [end, ec] = std::from_chars(begin, text.data() + text.size(), n);
    if (ec == std::errc() && end == text.data() + text.size()) return JsonValue(int64_t(n));
  }
  if (RE2::FullMatch(text, kFloat)) {
    double d = std::strtod(text.c_str(), nullptr);
    if (std::isfinite(d)) return NumberFromText(fmt::format("{}", d));
  }
  for (const char* prefix : {"0x", "0o"}) {
    if (text.rfind(prefix, 0) == 0 && text.size() > 2) {
      int64_t n = 0;
      auto [end, ec] = std::from_chars(text.data() + 2, text.data() + text.size(), n, prefix[1] == 'x' ? 16 : 8);
      if (ec == std::errc() && end == text.data() + text.size()) return JsonValue(int64_t(n));
    }
  }
  return JsonValue(text);
}

Result<JsonValue> YamlToJson(const std::string& yaml_text, const std::string& what) {
  auto node = graphdata::ParseStrictYaml(yaml_text);
  if (!node.ok()) return node.status().WithContext(what);
  return NodeToJson(*node, what, 0);
}

Result<JsonArray> YamlDocumentsToJson(const std::string& yaml_text, const std::string& what) {
  auto documents = graphdata::ParseStrictYamlDocuments(yaml_text);
  if (!documents.ok()) return documents.status().WithContext(what);
  JsonArray out;
  out.reserve(documents->size());
  for (size_t i = 0; i < documents->size(); ++i) {
    CINCINNATI_ASSIGN_OR_RETURN(JsonValue document, NodeToJson((*documents)[i], fmt::format("{}#{}", what, i), 0));
    out.push_back(std::move(document));
  }
  return out;
}

}  // namespace cincinnati::kube
