// CSV as RFC 4180 writes it: fields separated by commas, records by CRLF or LF; a field
// in double quotes may hold commas, line breaks and doubled quotes (""). Total: text
// that is not CSV (an unclosed quote, a quote inside an unquoted field, text after a
// closing quote) is an error naming the line. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cincinnati {

struct CsvRecord {
  size_t line = 0;  // the 1-based line the record starts on
  std::vector<std::string> fields;
};

// Records in order; blank lines are skipped.
Result<std::vector<CsvRecord>> ReadCsv(std::string_view text);

// `field` as a CSV field: quoted when it holds a comma, a quote or a line break.
std::string CsvField(std::string_view field);

}  // namespace cincinnati
