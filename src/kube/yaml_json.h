// YAML to JSON for Kubernetes-style documents: release manifests, UpgradeConfig files,
// the operator's settings. The YAML is read strictly (graph-data/yaml_document.h:
// duplicate keys and other ambiguities are errors); plain scalars are resolved as the
// YAML 1.2 core schema does (null, booleans, integers in decimal, 0x and 0o, finite
// floats), quoted ones stay strings, and a mapping key must be a scalar.
//
// Total: never throws; documents nested deeper than 64 levels are errors; every error
// names `what` (and the document's index: "file.yaml#2").
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "kube/json_value.h"

namespace cincinnati::kube {

// The one document of `yaml_text`.
Result<JsonValue> YamlToJson(const std::string& yaml_text, const std::string& what);

// A plain (unquoted, untagged) scalar as the documents above read it: null, a bool, an
// integer, a finite float, else a string. For readers built on libyaml's events (the
// operator's fleet file) that type scalars as these documents do.
JsonValue PlainScalarToJson(const std::string& text);

// Every document of a multi-document stream, in order (an empty document is null).
Result<JsonArray> YamlDocumentsToJson(const std::string& yaml_text, const std::string& what);

}  // namespace cincinnati::kube
