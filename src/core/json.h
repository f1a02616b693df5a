// JSON documents the project builds or changes are Boost.JSON values (boost::json::
// object keeps members in insertion order, so what is written is stable); simdjson reads
// fast where nothing is changed, and core/json_writer.h writes the graph on the hot path.
//
// WriteJson writes a value in the project's forms: strings escaped as Boost.JSON (and
// serde_json) escape them, integers as written, and other numbers in their shortest form
// ("1.0", "0.25", "1e+20", as simdjson writes them, not Boost's "1E0"), which the
// documents have always carried. `indent` > 0 pretty-prints with that many spaces per
// level (Boost.JSON 1.81 has no pretty printer). Thread-safe; never throws.
#pragma once

#include <boost/json.hpp>

#include <string>

namespace cincinnati {

std::string WriteJson(const boost::json::value& value, int indent = 0);

// Compact, with every double given with `decimals` digits after the point ("1.0000"),
// for documents whose fractions have always been written so.
std::string WriteJsonFixed(const boost::json::value& value, int decimals);

}  // namespace cincinnati
