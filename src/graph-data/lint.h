// CheckGraphData: the linter behind `cincinnati graph-data check`. It reports every
// problem of a graph-data directory, each with its file and reason, instead of
// stopping at the first. Errors are what would make the update service reject or drop
// data, plus the rules the graph-data repository's CI enforces (every file class
// disallowed, https risk URLs, CamelCase risk names, well-formed matching rules, one
// definition per risk name). Warnings are suspicious but served as-is.
#pragma once

#include <filesystem>

#include "core/diagnostics.h"

namespace cincinnati::graphdata {

Diagnostics CheckGraphData(const std::filesystem::path& root);

}  // namespace cincinnati::graphdata
