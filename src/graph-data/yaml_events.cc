#include "graph-data/yaml_events.h"

#include <string_view>

#include <fmt/format.h>

namespace cincinnati::graphdata {
namespace {

// Whether line `line` (from 0) of the parser's input starts with blanks holding a tab.
bool IndentedWithATab(const yaml_parser_t& parser, size_t line) {
  const unsigned char* at = parser.input.string.start;
  const unsigned char* end = parser.input.string.end;
  if (!at) return false;
  for (size_t n = 0; n < line && at < end; ++at) n += *at == '\n';
  for (; at < end && (*at == ' ' || *at == '\t'); ++at) {
    if (*at == '\t') return true;
  }
  return false;
}

Status ParserError(const yaml_parser_t& parser) {
  std::string why = parser.problem ? parser.problem : "malformed YAML";
  // libyaml's words for a tab where indentation goes do not say "tab".
  if (parser.problem && std::string_view(parser.problem).find("cannot start any token") != std::string_view::npos &&
      IndentedWithATab(parser, parser.problem_mark.line)) {
    why += " (a tab: YAML indents with spaces only)";
  }
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
