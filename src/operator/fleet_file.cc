#include "operator/fleet_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "env/file_system.h"
#include "graph-data/yaml_events.h"
#include "kube/yaml_json.h"

namespace cincinnati::upgrade {
namespace {

using graphdata::YamlErrorAt;

// As graph-data/yaml_document.cc: deeper collections are a parse error.
constexpr size_t kMaxDepth = 200;
// As kube::YamlToJson: a value deeper than this is "nested too deeply".
constexpr size_t kMaxJsonDepth = 64;
// What aliases may expand to: a shared labels mapping costs its text once per use, far
// below this in any fleet; a "billion laughs" passes it within a few levels.
constexpr uint64_t kAliasFactor = 4;
constexpr uint64_t kAliasAllowance = uint64_t{64} << 10;

// How the JSON DOM (kube/yaml_json.h) types a scalar; the fleet file only wants strings.
enum class ScalarType : uint8_t { kNull, kString, kOther };

ScalarType TypeOf(std::string_view text, bool plain, bool tagged) {
  if (tagged || !plain) return ScalarType::kString;
  if (graphdata::IsYamlNullSpelling(text)) return ScalarType::kNull;
  // Only these first characters can make a plain scalar null, a bool or a number;
  // names, URLs, paths and most label values skip the core schema's regular expressions.
  static constexpr std::string_view kMaybeNotString = "nNtTfF~+-.0123456789";
  if (kMaybeNotString.find(text.front()) == std::string_view::npos) return ScalarType::kString;
  const kube::JsonValue v = kube::PlainScalarToJson(std::string(text));
  return v.is_string() ? ScalarType::kString : v.is_null() ? ScalarType::kNull : ScalarType::kOther;
}

// Open addressing over indices into an array the caller owns, found by the name each
// element has (name_of(i)): 4 to 16 bytes a name, where a std::set<std::string> spends
// about 80 (a node and a copy of the name).
class IndexTable {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  template <typename NameOf>
  uint32_t Find(std::string_view name, const NameOf& name_of) const {
    if (slots_.empty()) return kNone;
    const size_t mask = slots_.size() - 1;
    for (size_t i = std::hash<std::string_view>{}(name) & mask;; i = (i + 1) & mask) {
      if (slots_[i] == kNone || name_of(slots_[i]) == name) return slots_[i];
    }
  }

  // `name` maps to `index` from now on (a later anchor of a name shadows the earlier).
  template <typename NameOf>
  void Put(std::string_view name, uint32_t index, const NameOf& name_of) {
    if ((size_ + 1) * 2 > slots_.size()) Grow(name_of);
    const size_t mask = slots_.size() - 1;
    for (size_t i = std::hash<std::string_view>{}(name) & mask;; i = (i + 1) & mask) {
      if (slots_[i] == kNone) ++size_;
      if (slots_[i] == kNone || name_of(slots_[i]) == name) {
        slots_[i] = index;
        return;
      }
    }
  }

  void Clear() {
    slots_.clear();
    size_ = 0;
  }

 private:
  template <typename NameOf>
  void Grow(const NameOf& name_of) {
    std::vector<uint32_t> old(std::max<size_t>(16, slots_.size() * 2), kNone);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (uint32_t index : old) {
      if (index == kNone) continue;
      size_t i = std::hash<std::string_view>{}(name_of(index)) & mask;
      while (slots_[i] != kNone) i = (i + 1) & mask;
      slots_[i] = index;
    }
  }

  std::vector<uint32_t> slots_;
  size_t size_ = 0;
};

// The keys of one mapping, to refuse a duplicate. A cluster has four: they are scanned;
// a mapping of more gets an index.
class KeySet {
 public:
  bool Insert(std::string_view key) {
    const auto name_of = [this](uint32_t i) { return Key(i); };
    const uint32_t count = static_cast<uint32_t>(ends_.size());
    if (count < kScanned) {
      for (uint32_t i = 0; i < count; ++i) {
        if (Key(i) == key) return false;
      }
    } else {
      if (count == kScanned) {
        for (uint32_t i = 0; i < count; ++i) index_.Put(Key(i), i, name_of);
      }
      if (index_.Find(key, name_of) != IndexTable::kNone) return false;
    }
    pool_.append(key);
    ends_.push_back(static_cast<uint32_t>(pool_.size()));
    if (count >= kScanned) index_.Put(key, count, name_of);
    return true;
  }

  void Clear() {
    pool_.clear();
    ends_.clear();
    index_.Clear();
  }

 private:
  static constexpr uint32_t kScanned = 8;
  std::string_view Key(uint32_t i) const {
    const uint32_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(pool_).substr(begin, ends_[i] - begin);
  }
  std::string pool_;
  std::vector<uint32_t> ends_;
  IndexTable index_;
};


// Builds the clusters from the document's nodes (the file's own, and those aliases stand
// for) and finds the faults a JSON DOM of the document (kube::YamlToJson) and checks on
// it would find, reporting the one they would: a key that is not a scalar or nesting
// past 64 levels first, then the top level's faults (not a mapping, an unknown key, no
// `clusters` list), then the first cluster's fault in the order its checks run. After a
// cluster's fault no more clusters are built, but every node is still looked at for the
// faults that come before it.
class FleetBuilder {
 public:
  enum class Kind : uint8_t { kMap, kSeq, kScalar };

  void Open(bool is_map) {
    if (hard_) return;
    const Role role = Place(is_map ? Kind::kMap : Kind::kSeq, {}, ScalarType::kOther);
    if (hard_) return;
    if (depth_ == frames_.size()) frames_.emplace_back();
    Frame& f = frames_[depth_++];
    f.role = role;
    f.is_map = is_map;
    f.at_key = true;
    f.items = 0;
  }

  void Close() {
    if (hard_) return;
    const Role role = frames_[--depth_].role;
    if (role == Role::kCluster) FinishCluster();
    if (depth_ > 0 && frames_[depth_ - 1].is_map) frames_[depth_ - 1].at_key = true;
  }

  void Scalar(std::string_view text, ScalarType type) {
    if (hard_) return;
    Place(Kind::kScalar, text, type);
  }

  // A fault that makes the rest unread: no node can change the outcome.
  bool Decided() const { return hard_.has_value(); }

  Result<std::vector<FleetCluster>> Finish(const std::string& what) {
    auto in = [&](std::string message) { return Status::InvalidArgument(std::move(message)).WithContext(what); };
    if (hard_) return in(*hard_);
    if (!root_is_mapping_) return in("the fleet file must be a mapping with a `clusters` list");
    if (top_unknown_) return in(fmt::format("{}: unknown key (known: clusters)", *top_unknown_));
    if (!clusters_are_a_list_) return in("clusters: must be a list");
    if (cluster_fault_) return in(*cluster_fault_);
    return std::move(clusters_);
  }

 private:
  enum class Role : uint8_t { kTop, kClusters, kCluster, kLabels, kIgnored };
  struct Frame {
    Role role = Role::kIgnored;
    bool is_map = false;
    bool at_key = true;
    std::string key;   // a mapping's current key
    size_t items = 0;  // a sequence's items so far
  };
  // A cluster's fields as they come; checked in ParseFleet's order when its mapping ends.
  struct Pending {
    FleetCluster cluster;
    size_t index = 0;
    ScalarType name = ScalarType::kNull, agent = ScalarType::kNull, token_file = ScalarType::kNull;
    std::optional<std::string> unknown_key;
    bool labels_not_a_mapping = false;
    std::optional<std::string> label_not_a_string;
  };

  Role Place(Kind kind, std::string_view text, ScalarType type);
  Role PlaceTop(const std::string& key, Kind kind);
  Role PlaceCluster(size_t index, Kind kind);
  Role PlaceField(std::string& key, Kind kind, std::string_view text, ScalarType type);
  void FinishCluster();
  std::optional<std::string> ClusterFault();

  std::vector<Frame> frames_;  // frames_[0, depth_) are open; kept to reuse their keys' storage
  size_t depth_ = 0;
  std::optional<std::string> hard_;
  bool root_is_mapping_ = false;
  std::optional<std::string> top_unknown_;
  bool clusters_are_a_list_ = false;
  std::optional<std::string> cluster_fault_;
  Pending pending_;
  std::vector<FleetCluster> clusters_;
  IndexTable names_;
};

// Puts a node (a scalar, or a collection that opens) under the open collection; returns
// the role a collection takes.
FleetBuilder::Role FleetBuilder::Place(Kind kind, std::string_view text, ScalarType type) {
  if (depth_ == 0) {
    root_is_mapping_ = kind == Kind::kMap;
    return root_is_mapping_ ? Role::kTop : Role::kIgnored;
  }
  Frame& parent = frames_[depth_ - 1];
  if (parent.is_map && parent.at_key) {
    if (kind != Kind::kScalar || type == ScalarType::kNull) {
      hard_ = "a mapping key that is not a scalar";
    } else {
      parent.key.assign(text);
      parent.at_key = false;
    }
    return Role::kIgnored;
  }
  if (depth_ > kMaxJsonDepth) {
    hard_ = "nested too deeply";
    return Role::kIgnored;
  }
  // A scalar value completes here; a collection's completes when it closes.
  if (parent.is_map && kind == Kind::kScalar) parent.at_key = true;
  switch (parent.role) {
    case Role::kTop:
      return PlaceTop(parent.key, kind);
    case Role::kClusters:
      return PlaceCluster(parent.items++, kind);
    case Role::kCluster:
      return PlaceField(parent.key, kind, text, type);
    case Role::kLabels:
      if (kind == Kind::kScalar && type == ScalarType::kString) {
        pending_.cluster.labels.emplace(std::move(parent.key), text);
      } else if (!pending_.label_not_a_string) {
        pending_.label_not_a_string = parent.key;
      }
      return Role::kIgnored;
    case Role::kIgnored:
      return Role::kIgnored;
  }
  return Role::kIgnored;
}

FleetBuilder::Role FleetBuilder::PlaceTop(const std::string& key, Kind kind) {
  if (key == "clusters") {
    clusters_are_a_list_ = kind == Kind::kSeq;
    return clusters_are_a_list_ ? Role::kClusters : Role::kIgnored;
  }
  if (!top_unknown_) top_unknown_ = key;
  return Role::kIgnored;
}

FleetBuilder::Role FleetBuilder::PlaceCluster(size_t index, Kind kind) {
  if (cluster_fault_) return Role::kIgnored;
  if (kind != Kind::kMap) {
    cluster_fault_ = fmt::format("clusters[{}].: must be a mapping", index);
    return Role::kIgnored;
  }
  pending_ = Pending{};
  pending_.index = index;
  return Role::kCluster;
}

FleetBuilder::Role FleetBuilder::PlaceField(std::string& key, Kind kind, std::string_view text, ScalarType type) {
  auto take = [&](std::string& out, ScalarType& out_type) {
    out_type = kind == Kind::kScalar ? type : ScalarType::kOther;
    if (out_type == ScalarType::kString) out.assign(text);
    return Role::kIgnored;
  };
  if (key == "name") return take(pending_.cluster.name, pending_.name);
  if (key == "agent") return take(pending_.cluster.agent_url, pending_.agent);
  if (key == "tokenFile") return take(pending_.cluster.token_file, pending_.token_file);
  if (key == "labels") {
    if (kind == Kind::kMap) return Role::kLabels;
    if (kind == Kind::kSeq || type != ScalarType::kNull) pending_.labels_not_a_mapping = true;
    return Role::kIgnored;
  }
  if (!pending_.unknown_key) pending_.unknown_key = std::move(key);
  return Role::kIgnored;
}

void FleetBuilder::FinishCluster() {
  if (auto fault = ClusterFault()) {
    cluster_fault_ = std::move(fault);
    return;
  }
  clusters_.push_back(std::move(pending_.cluster));
  const uint32_t index = static_cast<uint32_t>(clusters_.size() - 1);
  names_.Put(clusters_.back().name, index, [this](uint32_t i) { return std::string_view(clusters_[i].name); });
}

// The first fault of the pending cluster, in ParseFleet's order of checks.
std::optional<std::string> FleetBuilder::ClusterFault() {
  const Pending& p = pending_;
  const FleetCluster& c = p.cluster;
  auto at = [&](std::string_view key) { return fmt::format("clusters[{}].{}", p.index, key); };
  if (p.unknown_key) return fmt::format("{}: unknown key (known: name, agent, tokenFile, labels)", at(*p.unknown_key));
  if (p.name == ScalarType::kOther) return at("name") + ": must be a string";
  if (p.agent == ScalarType::kOther) return at("agent") + ": must be a string";
  if (p.token_file == ScalarType::kOther) return at("tokenFile") + ": must be a string";
  static constexpr std::string_view kNameChars = "abcdefghijklmnopqrstuvwxyz0123456789-.";
  if (c.name.empty() || c.name.find_first_not_of(kNameChars) != std::string::npos || c.name.size() > 253) {
    return fmt::format("{}: \"{}\" is not a cluster name (lower-case letters, digits, '-' and '.')", at("name"), c.name);
  }
  const auto name_of = [this](uint32_t i) { return std::string_view(clusters_[i].name); };
  if (names_.Find(c.name, name_of) != IndexTable::kNone) return fmt::format("{}: \"{}\" is listed twice", at("name"), c.name);
  if (c.agent_url.rfind("http://", 0) != 0 && c.agent_url.rfind("https://", 0) != 0) {
    return fmt::format("{}: \"{}\" is not an http:// or https:// URL", at("agent"), c.agent_url);
  }
  if (p.labels_not_a_mapping) return at("labels") + ": must be a mapping of strings";
  if (p.label_not_a_string) return fmt::format("{}.{}: must be a string", at("labels"), *p.label_not_a_string);
  return std::nullopt;
}


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

// A later anchor of the same name shadows the earlier one (YAML 1.2 §3.2.2.2).
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
