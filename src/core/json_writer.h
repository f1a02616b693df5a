// JSON string escaping for the graph writer (core/graph_json.cc), the project's measured
// hot path: a policy engine writes every answer it has not cached with it (9.95 MB graph
// in 18.6 ms, bench/RESULTS.md; per-cluster answers in bench/answer_bench.cc), streaming
// straight into the output without building a document first. Documents that are built
// or changed use Boost.JSON (core/json.h), whose escaping is the same.
//
// The reference's (serde_json's) string escaping: `"`, `\` and control characters are
// escaped (\b \f \n \r \t, else \u00xx), nothing else.
#pragma once

#include <string>
#include <string_view>

namespace cincinnati {

void AppendJsonString(std::string& out, std::string_view s);
std::string JsonString(std::string_view s);

}  // namespace cincinnati
