#include "core/csv.h"

#include <fmt/format.h>

namespace cincinnati {

Result<std::vector<CsvRecord>> ReadCsv(std::string_view text) {
  std::vector<CsvRecord> out;
  CsvRecord record;
  std::string field;
  size_t line = 1;
  bool quoted = false;       // inside a quoted field
  bool was_quoted = false;   // the current field was quoted (only a separator may follow)
  bool in_record = false;
  auto end_field = [&] {
    record.fields.push_back(std::move(field));
    field.clear();
    was_quoted = false;
  };
  auto end_record = [&] {
    end_field();
    const bool blank = record.fields.size() == 1 && record.fields[0].empty();
    if (!blank) out.push_back(std::move(record));
    record = CsvRecord{};
    in_record = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!in_record) {
      record.line = line;
      in_record = true;
    }
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
        was_quoted = true;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == ',') {
      end_field();
    } else if (c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      if (c == '\r') ++i;
      end_record();
      ++line;
    } else if (was_quoted) {
      return Status::InvalidArgument(fmt::format("line {}: text after a closing quote", line));
    } else if (c == '"') {
      if (!field.empty()) return Status::InvalidArgument(fmt::format("line {}: a quote inside an unquoted field", line));
      quoted = true;
    } else {
      field += c;
    }
  }
  if (quoted) return Status::InvalidArgument(fmt::format("line {}: a quoted field is not closed", record.line));
  if (in_record) end_record();
  return out;
}

std::string CsvField(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace cincinnati
