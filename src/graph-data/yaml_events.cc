#include "graph-data/yaml_events.h"

#include <fmt/format.h>

namespace cincinnati::graphdata {
namespace {

Status ParserError(const yaml_parser_t& parser) {
  std::string why = parser.problem ? parser.problem : "malformed YAML";
  if (parser.context) {
    why = fmt::format("{} (line {}, column {}): {}", parser.context, parser.context_mark.line + 1,
                      parser.context_mark.column + 1, why);
  }
  return YamlErrorAt(parser.problem_mark, why);
}

}  // namespace

Status YamlErrorAt(const yaml_mark_t& mark, const std::string& why) {
  return Status::InvalidArgument(
      fmt::format("invalid YAML at line {}, column {}: {}", mark.line + 1, mark.column + 1, why));
}

bool IsYamlNullSpelling(std::string_view s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

YamlEventStream::YamlEventStream(std::string_view content) {
  yaml_parser_initialize(&parser_);
  yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(content.data()), content.size());
}

YamlEventStream::~YamlEventStream() {
  if (have_event_) yaml_event_delete(&event_);
  yaml_parser_delete(&parser_);
}

Result<const yaml_event_t*> YamlEventStream::Next() {
  if (have_event_) yaml_event_delete(&event_);
  have_event_ = yaml_parser_parse(&parser_, &event_) != 0;
  if (!have_event_) return ParserError(parser_);
  return &event_;
}

}  // namespace cincinnati::graphdata
