// Typed reading of YAML scalars the way the reference's serde_yaml does: a plain
// scalar that resolves to null, a bool, an int or a float is not a string, so
// `to: 4.1` or `name: 4` are rejected rather than silently stringified. Quoted and
// block scalars are always strings.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/status.h"

namespace cincinnati::graphdata {

// The YAML 1.2 core-schema type a plain scalar resolves to: null (~, null, Null,
// NULL, empty), bool (true/True/TRUE, false/...), int ([-+]?[0-9]+, 0o octal, 0x hex),
// float ([-+]?(.5|5|5.|5.5)([eE][-+]?[0-9]+)?, [-+]?.inf, .nan in three spellings), else string.
enum class PlainKind { kNull, kBool, kInt, kFloat, kString };
PlainKind ResolvePlain(std::string_view s);

std::optional<std::string> YamlString(const YAML::Node& node);

// Parses one YAML document strictly (graph-data/yaml_document.h). Errors carry line
// and column.
Result<YAML::Node> ParseYaml(const std::string& content);

// A short description of a node's kind for error messages ("a map", "an integer"...).
std::string DescribeYaml(const YAML::Node& node);

// Helpers for decoders whose errors name the entry ("channels[2]: ..."; `where` may be
// empty at the top level).
Status YamlError(const std::string& where, const std::string& why);
// An error naming the first key of `map` that is not in `allowed`.
Status YamlOnlyKeys(const YAML::Node& map, const std::string& where, std::initializer_list<const char*> allowed);
// A required string-typed key.
Result<std::string> YamlRequiredString(const YAML::Node& map, const char* key, const std::string& where);
// An optional list of strings (absent: empty); a lone string or a non-string item is an error.
Result<std::vector<std::string>> YamlStringList(const YAML::Node& map, const char* key, const std::string& where);

}  // namespace cincinnati::graphdata
