// A cluster's customer and labels in JSON, as the remote directory answers them, as
// the SQLite file stores labels, and as `cincinnati clusters import` reads them:
// {"customer": "...", "labels": {"key": "value", ...}}, both keys optional.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "core/cluster.h"
#include "core/status.h"

namespace cincinnati::directory {

// Errors are prefixed with `where` when it is not empty.
Result<std::map<std::string, std::string>> LabelsFromJson(simdjson::dom::element labels, std::string_view where);
Result<ClusterInfo> ClusterInfoFromJson(simdjson::dom::element object, std::string_view where);
std::string LabelsToJson(const std::map<std::string, std::string>& labels);

}  // namespace cincinnati::directory
