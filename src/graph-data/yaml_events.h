// libyaml's event parser, shared by the readers built on its events (the strict yaml-cpp
// tree of yaml_document.h, the operator's fleet file): one owner of the parser and of its
// current event, and errors that name line and column (1-based) in one wording:
// "invalid YAML at line L, column C: why".
//
// The input is not copied: `content` must outlive the stream. Total: libyaml never
// throws, and the event and the parser are freed on every path.
#pragma once

#include <yaml.h>

#include <string>
#include <string_view>

#include "core/status.h"

namespace cincinnati::graphdata {

Status YamlErrorAt(const yaml_mark_t& mark, const std::string& why);

// The plain spellings YAML 1.2's core schema reads as null (~, null, Null, NULL, empty).
bool IsYamlNullSpelling(std::string_view s);

class YamlEventStream {
 public:
  explicit YamlEventStream(std::string_view content);
  ~YamlEventStream();
  YamlEventStream(const YamlEventStream&) = delete;
  YamlEventStream& operator=(const YamlEventStream&) = delete;

  // The next event (valid until the next call), or the parser's error with its position.
  Result<const yaml_event_t*> Next();

 private:
  yaml_parser_t parser_;
  yaml_event_t event_;
  bool have_event_ = false;
};

}  // namespace cincinnati::graphdata
