// Typed reading of YAML scalars the way the reference's serde_yaml does: a plain
// scalar that resolves to null, a bool, an int or a float is not a string, so
// `to: 4.1` or `name: 4` are rejected rather than silently stringified. Quoted and
// block scalars are always strings.
#pragma once

#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "core/status.h"

namespace cincinnati::graphdata {

std::optional<std::string> YamlString(const YAML::Node& node);

// Parses one YAML document. Errors carry line and column.
Result<YAML::Node> ParseYaml(const std::string& content);

// A short description of a node's kind for error messages ("a map", "an integer"...).
std::string DescribeYaml(const YAML::Node& node);

}  // namespace cincinnati::graphdata
