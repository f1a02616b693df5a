#include "operator/fleet_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "env/file_system.h"
#include "graph-data/yaml_events.h"
#include "operator/fleet_builder.h"

namespace cincinnati::upgrade {
namespace {

using graphdata::YamlErrorAt;

// As graph-data/yaml_document.cc: deeper collections are a parse error.
constexpr size_t kMaxDepth = 200;
// What aliases may expand to: a shared labels mapping costs its text once per use, far
// below this in any fleet; a "billion laughs" passes it within a few levels.
constexpr uint64_t kAliasFactor = 4;
constexpr uint64_t kAliasAllowance = uint64_t{64} << 10;

// Reads the file's events: the parse-level rules of graph-data/yaml_document.cc (nesting,
// duplicate keys, anchors before their aliases, one document), the aliases' bound, and
// the nodes handed to the FleetBuilder. An anchored node is kept as a compact log of its
// events (an opcode byte, a scalar's length and text, an alias's anchor number) that an
// alias replays; the log holds what anchored nodes span once, however nested.
class FleetReader {
 public:
  explicit FleetReader(std::string_view text)
      : text_(text), alias_budget_(kAliasFactor * text.size() + kAliasAllowance) {}

  Result<std::vector<FleetCluster>> Read(const std::string& what) {
    if (Status s = ReadEvents(); !s.ok()) return s.WithContext(what);
    return builder_.Finish(what);
  }

 private:
  enum Op : uint8_t { kMapOp, kSeqOp, kEndOp, kAliasOp, kScalarOp /* + ScalarType */ };
  struct Anchor {
    uint32_t name_begin, name_size;  // in anchor_names_
    uint32_t begin, end;             // in log_: a scalar's text, or a collection's events
    uint64_t cost;                   // bytes of YAML it stands for
    bool scalar;
    ScalarType type;
  };
  struct Frame {
    bool is_map = false;
    bool at_key = true;
    KeySet keys;
    std::string anchor;
    size_t log_begin = 0;
    size_t start = 0;         // the node's first byte in the text
    uint64_t alias_cost = 0;  // what the aliases within it stand for
  };

  Status ReadEvents();
  Status Open(bool is_map, const yaml_char_t* anchor, const yaml_mark_t& mark);
  Status Close(const yaml_event_t& e);
  Status Scalar(const yaml_event_t& e);
  Status Alias(const yaml_event_t& e);
  Status Completed(bool scalar, ScalarType type, std::string_view text, const yaml_mark_t& mark);
  void Remember(std::string_view name, Anchor anchor);
  void Replay(const Anchor& anchor);
  void Log(uint8_t op) {
    if (recording_ > 0) log_.push_back(static_cast<char>(op));
  }
  void LogNumber(uint64_t n);
  uint64_t ReadNumber(size_t& pos) const;
  std::string_view AnchorName(uint32_t i) const {
    return std::string_view(anchor_names_).substr(anchors_[i].name_begin, anchors_[i].name_size);
  }

  std::string_view text_;
  uint64_t alias_budget_;
  uint64_t aliases_expand_to_ = 0;
  std::vector<Frame> frames_;  // frames_[0, depth_) are open; kept to reuse their storage
  size_t depth_ = 0;
  int recording_ = 0;  // anchored collections open
  std::string log_;
  std::vector<Anchor> anchors_;
  std::string anchor_names_;
  IndexTable anchor_index_;
  FleetBuilder builder_;
};

Status FleetReader::ReadEvents() {
  graphdata::YamlEventStream events(text_);
  bool had_document = false;
  for (;;) {
    CINCINNATI_ASSIGN_OR_RETURN(const yaml_event_t* e, events.Next());
    switch (e->type) {
      case YAML_STREAM_END_EVENT:
        return Status::OK();
      case YAML_DOCUMENT_START_EVENT:
        if (had_document) return YamlErrorAt(e->start_mark, "a second document; one file holds one document");
        break;
      case YAML_DOCUMENT_END_EVENT:
        had_document = true;
        break;
      case YAML_MAPPING_START_EVENT:
        CINCINNATI_RETURN_IF_ERROR(Open(true, e->data.mapping_start.anchor, e->start_mark));
        break;
      case YAML_SEQUENCE_START_EVENT:
        CINCINNATI_RETURN_IF_ERROR(Open(false, e->data.sequence_start.anchor, e->start_mark));
        break;
      case YAML_MAPPING_END_EVENT:
      case YAML_SEQUENCE_END_EVENT:
        CINCINNATI_RETURN_IF_ERROR(Close(*e));
        break;
      case YAML_SCALAR_EVENT:
        CINCINNATI_RETURN_IF_ERROR(Scalar(*e));
        break;
      case YAML_ALIAS_EVENT:
        CINCINNATI_RETURN_IF_ERROR(Alias(*e));
        break;
      default:  // stream start, no event
        break;
    }
  }
}

Status FleetReader::Open(bool is_map, const yaml_char_t* anchor, const yaml_mark_t& mark) {
  if (depth_ >= kMaxDepth) return YamlErrorAt(mark, fmt::format("nested deeper than {} levels", kMaxDepth));
  if (depth_ == frames_.size()) frames_.emplace_back();
  Frame& f = frames_[depth_++];
  f.is_map = is_map;
  f.at_key = true;
  f.keys.Clear();
  f.anchor = anchor ? reinterpret_cast<const char*>(anchor) : "";
  f.log_begin = log_.size();
  f.start = mark.index;
  f.alias_cost = 0;
  if (anchor) ++recording_;
  Log(is_map ? kMapOp : kSeqOp);
  builder_.Open(is_map);
  return Status::OK();
}

Status FleetReader::Close(const yaml_event_t& e) {
  Frame& f = frames_[--depth_];
  Log(kEndOp);
  if (!f.anchor.empty()) {
    --recording_;
    const uint64_t span = std::max<uint64_t>(1, e.end_mark.index - f.start);
    Remember(f.anchor, Anchor{0, 0, static_cast<uint32_t>(f.log_begin), static_cast<uint32_t>(log_.size()),
                              span + f.alias_cost, false, ScalarType::kOther});
  }
  if (depth_ > 0) frames_[depth_ - 1].alias_cost += f.alias_cost;
  builder_.Close();
  return Completed(false, ScalarType::kOther, {}, e.start_mark);
}

Status FleetReader::Scalar(const yaml_event_t& e) {
  const auto& s = e.data.scalar;
  const std::string_view text(reinterpret_cast<const char*>(s.value), s.length);
  const bool plain = s.style == YAML_PLAIN_SCALAR_STYLE, tagged = s.tag != nullptr;
  // A key's type only matters if it is null (then it is no key): the core schema's
  // regular expressions run for values, and for keys an alias may make values.
  const bool key = depth_ > 0 && frames_[depth_ - 1].is_map && frames_[depth_ - 1].at_key && !s.anchor;
  const ScalarType type = key ? (!tagged && plain && graphdata::IsYamlNullSpelling(text) ? ScalarType::kNull : ScalarType::kString)
                              : TypeOf(text, plain, tagged);
  Log(kScalarOp + static_cast<uint8_t>(type));
  if (recording_ > 0) LogNumber(text.size());
  if (s.anchor) {
    // Its text goes to the log whether or not an anchored collection records around it.
    const size_t begin = log_.size();
    log_.append(text);
    const uint64_t span = std::max<uint64_t>(1, e.end_mark.index - e.start_mark.index);
    Remember(reinterpret_cast<const char*>(s.anchor),
             Anchor{0, 0, static_cast<uint32_t>(begin), static_cast<uint32_t>(log_.size()), span, true, type});
  } else if (recording_ > 0) {
    log_.append(text);
  }
  CINCINNATI_RETURN_IF_ERROR(Completed(true, type, text, e.start_mark));
  builder_.Scalar(text, type);
  return Status::OK();
}

Status FleetReader::Alias(const yaml_event_t& e) {
  const std::string_view name(reinterpret_cast<const char*>(e.data.alias.anchor));
  const uint32_t index = anchor_index_.Find(name, [this](uint32_t i) { return AnchorName(i); });
  if (index == IndexTable::kNone) {
    return YamlErrorAt(e.start_mark, fmt::format("alias '*{}' names no anchor before it", name));
  }
  const Anchor anchor = anchors_[index];
  aliases_expand_to_ += anchor.cost;
  if (aliases_expand_to_ > alias_budget_) {
    return YamlErrorAt(e.start_mark, fmt::format("aliases expand to more than {} bytes (4 times the file's {} bytes, plus 64 KiB)",
                                                 alias_budget_, text_.size()));
  }
  if (depth_ > 0) frames_[depth_ - 1].alias_cost += anchor.cost;
  Log(kAliasOp);
  if (recording_ > 0) LogNumber(index);
  const std::string_view text = anchor.scalar ? std::string_view(log_).substr(anchor.begin, anchor.end - anchor.begin) : "";
  CINCINNATI_RETURN_IF_ERROR(Completed(anchor.scalar, anchor.type, text, e.start_mark));
  Replay(anchor);
  return Status::OK();
}

// A node is complete under the open collection: a mapping's key must be new in it.
Status FleetReader::Completed(bool scalar, ScalarType type, std::string_view text, const yaml_mark_t& mark) {
  if (depth_ == 0) return Status::OK();
  Frame& top = frames_[depth_ - 1];
  if (!top.is_map) return Status::OK();
  top.at_key = !top.at_key;
  if (top.at_key || !scalar) return Status::OK();  // a value, or a collection as a key
  // yaml_document.cc's marker for a null key, so that both refuse the same duplicates.
  static constexpr std::string_view kNullKey("\0null", 5);
  const bool null = type == ScalarType::kNull;
  if (!top.keys.Insert(null ? kNullKey : text)) {
    return YamlErrorAt(mark, fmt::format("duplicate key '{}'", null ? std::string_view("null") : text));
  }
  return Status::OK();
}

// A later anchor of the same name shadows the earlier one (as YAML 1.2 says of anchors).
void FleetReader::Remember(std::string_view name, Anchor anchor) {
  anchor.name_begin = static_cast<uint32_t>(anchor_names_.size());
  anchor.name_size = static_cast<uint32_t>(name.size());
  anchor_names_.append(name);
  anchors_.push_back(anchor);
  anchor_index_.Put(name, static_cast<uint32_t>(anchors_.size() - 1), [this](uint32_t i) { return AnchorName(i); });
}

// Hands the builder the nodes an alias stands for. Iterative: aliases within aliases
// nest as deep as the budget allows, far deeper than the stack would.
void FleetReader::Replay(const Anchor& anchor) {
  if (builder_.Decided()) return;
  if (anchor.scalar) {
    builder_.Scalar(std::string_view(log_).substr(anchor.begin, anchor.end - anchor.begin), anchor.type);
    return;
  }
  std::vector<std::pair<size_t, size_t>> ranges{{anchor.begin, anchor.end}};
  while (!ranges.empty() && !builder_.Decided()) {
    auto& [pos, end] = ranges.back();
    if (pos == end) {
      ranges.pop_back();
      continue;
    }
    const uint8_t op = static_cast<uint8_t>(log_[pos++]);
    if (op == kMapOp || op == kSeqOp) {
      builder_.Open(op == kMapOp);
    } else if (op == kEndOp) {
      builder_.Close();
    } else if (op == kAliasOp) {
      const Anchor& inner = anchors_[ReadNumber(pos)];
      if (inner.scalar) {
        builder_.Scalar(std::string_view(log_).substr(inner.begin, inner.end - inner.begin), inner.type);
      } else {
        ranges.emplace_back(inner.begin, inner.end);  // invalidates pos and end: used no more
      }
    } else {
      const size_t size = ReadNumber(pos);
      builder_.Scalar(std::string_view(log_).substr(pos, size), static_cast<ScalarType>(op - kScalarOp));
      pos += size;
    }
  }
}

// LEB128: a scalar's length or an anchor's number in one byte when under 128.
void FleetReader::LogNumber(uint64_t n) {
  for (; n >= 0x80; n >>= 7) log_.push_back(static_cast<char>(0x80 | (n & 0x7f)));
  log_.push_back(static_cast<char>(n));
}

uint64_t FleetReader::ReadNumber(size_t& pos) const {
  uint64_t n = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(log_[pos++]);
    n |= uint64_t{byte & 0x7fu} << shift;
    if (byte < 0x80) return n;
  }
}

}  // namespace

Result<std::vector<FleetCluster>> ParseFleet(const std::string& yaml, const std::string& what) {
  if (yaml.size() > kMaxFleetFileBytes) {
    return Status::TooLarge(fmt::format("{}: the fleet is {}, over the limit of {}", what, env::HumanBytes(yaml.size()),
                                        env::HumanBytes(kMaxFleetFileBytes)));
  }
  FleetReader reader(yaml);
  return reader.Read(what);
}

Result<std::vector<FleetCluster>> LoadFleet(const std::string& path) {
  CINCINNATI_ASSIGN_OR_RETURN(std::string text, env::ReadFile(path, kMaxFleetFileBytes));
  return ParseFleet(text, path);
}

}  // namespace cincinnati::upgrade
