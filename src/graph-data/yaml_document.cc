#include "graph-data/yaml_document.h"

#include "graph-data/yaml_events.h"

#include <map>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>

namespace cincinnati::graphdata {
namespace {

constexpr size_t kMaxDepth = 200;
// Nodes the document would have with every alias expanded; far above any real
// graph-data file, far below what would make the decoders' walks hurt.
constexpr size_t kMaxExpandedNodes = 1'000'000;

std::string Str(const yaml_char_t* s) { return s ? reinterpret_cast<const char*>(s) : ""; }

// yaml-cpp nodes have reference semantics: assigning to a node that exists rewrites
// the node it refers to (everything sharing it, too). So nodes here are only ever
// copy-constructed, never assigned; optional<> gives a fresh one each time.

// A collection being built, with what is needed to check its keys.
struct Frame {
  explicit Frame(YAML::NodeType::value type) : node(type) {}
  YAML::Node node;
  bool is_map = false;
  std::optional<YAML::Node> key;
  std::set<std::string> keys;
  std::string anchor;
  size_t weight = 1;  // this node plus its (expanded) children
};

struct Anchored {
  YAML::Node node;
  size_t weight = 1;
};

class TreeBuilder {
 public:
  // Adds a finished node to the collection on top (or makes it the root).
  Status Add(YAML::Node node, size_t weight, const yaml_mark_t& mark) {
    if (stack_.empty()) {
      root_.emplace(node);
      return CountWeight(weight, mark);
    }
    Frame& top = stack_.back();
    top.weight += weight;
    if (top.weight > kMaxExpandedNodes) return YamlErrorAt(mark, "aliases expand to too many nodes");
    if (!top.is_map) {
      top.node.push_back(node);
      return Status::OK();
    }
    if (!top.key) {
      if (node.IsScalar() || node.IsNull()) {
        std::string k = node.IsNull() ? std::string("\0null", 5) : node.Scalar();
        if (!top.keys.insert(k).second) {
          return YamlErrorAt(mark, fmt::format("duplicate key '{}'", node.IsNull() ? "null" : k));
        }
      }
      top.key.emplace(node);
      return Status::OK();
    }
    top.node.force_insert(*top.key, node);
    top.key.reset();
    return Status::OK();
  }

  Status Open(bool is_map, const yaml_char_t* anchor, const yaml_char_t* tag, const yaml_mark_t& mark) {
    if (stack_.size() >= kMaxDepth) return YamlErrorAt(mark, fmt::format("nested deeper than {} levels", kMaxDepth));
    Frame f(is_map ? YAML::NodeType::Map : YAML::NodeType::Sequence);
    if (tag) f.node.SetTag(Str(tag));
    f.is_map = is_map;
    f.anchor = Str(anchor);
    stack_.push_back(std::move(f));
    return Status::OK();
  }

  Status Close(const yaml_mark_t& mark) {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    if (!f.anchor.empty()) Remember(f.anchor, f.node, f.weight);
    return Add(f.node, f.weight, mark);
  }

  Status Scalar(const yaml_event_t& e) {
    const auto& s = e.data.scalar;
    std::string value(reinterpret_cast<const char*>(s.value), s.length);
    const bool plain = s.style == YAML_PLAIN_SCALAR_STYLE;
    const bool null = !s.tag && plain && IsYamlNullSpelling(value);
    YAML::Node node = null ? YAML::Node(YAML::NodeType::Null) : YAML::Node(value);
    if (!null) node.SetTag(s.tag ? Str(s.tag) : plain ? "?" : "!");
    if (s.anchor) Remember(Str(s.anchor), node, 1);
    return Add(node, 1, e.start_mark);
  }

  Status Alias(const yaml_event_t& e) {
    auto it = anchors_.find(Str(e.data.alias.anchor));
    if (it == anchors_.end()) {
      return YamlErrorAt(e.start_mark, fmt::format("alias '*{}' names no anchor before it", Str(e.data.alias.anchor)));
    }
    return Add(it->second.node, it->second.weight, e.start_mark);
  }

  YAML::Node root() const { return root_ ? *root_ : YAML::Node(); }

 private:
  // A later anchor of the same name shadows the earlier one (as YAML 1.2 says of anchors).
  void Remember(const std::string& name, const YAML::Node& node, size_t weight) {
    anchors_.erase(name);
    anchors_.emplace(name, Anchored{node, weight});
  }

  Status CountWeight(size_t weight, const yaml_mark_t& mark) {
    if (weight > kMaxExpandedNodes) return YamlErrorAt(mark, "aliases expand to too many nodes");
    return Status::OK();
  }

  std::vector<Frame> stack_;
  std::map<std::string, Anchored> anchors_;
  std::optional<YAML::Node> root_;
};

}  // namespace

namespace {

// The documents of `content`, each built as ParseStrictYaml builds one; with
// `one_document`, a second document is an error.
Result<std::vector<YAML::Node>> ParseDocuments(const std::string& content, bool one_document) {
  YamlEventStream events(content);
  std::vector<YAML::Node> documents;
  auto tree = std::make_unique<TreeBuilder>();
  bool open = false;
  for (;;) {
    CINCINNATI_ASSIGN_OR_RETURN(const yaml_event_t* e, events.Next());
    switch (e->type) {
      case YAML_STREAM_END_EVENT:
        if (documents.empty()) documents.push_back(tree->root());  // an empty stream: one null document
        return documents;
      case YAML_DOCUMENT_START_EVENT:
        if (one_document && !documents.empty()) {
          return YamlErrorAt(e->start_mark, "a second document; one file holds one document");
        }
        open = true;
        break;
      case YAML_DOCUMENT_END_EVENT:
        if (open) documents.push_back(tree->root());
        tree = std::make_unique<TreeBuilder>();  // anchors do not cross documents
        open = false;
        break;
      case YAML_MAPPING_START_EVENT:
        CINCINNATI_RETURN_IF_ERROR(
            tree->Open(true, e->data.mapping_start.anchor, e->data.mapping_start.tag, e->start_mark));
        break;
      case YAML_SEQUENCE_START_EVENT:
        CINCINNATI_RETURN_IF_ERROR(
            tree->Open(false, e->data.sequence_start.anchor, e->data.sequence_start.tag, e->start_mark));
        break;
      case YAML_MAPPING_END_EVENT:
      case YAML_SEQUENCE_END_EVENT:
        CINCINNATI_RETURN_IF_ERROR(tree->Close(e->start_mark));
        break;
      case YAML_SCALAR_EVENT:
        CINCINNATI_RETURN_IF_ERROR(tree->Scalar(*e));
        break;
      case YAML_ALIAS_EVENT:
        CINCINNATI_RETURN_IF_ERROR(tree->Alias(*e));
        break;
      default:  // stream start, no event
        break;
    }
  }
}

}  // namespace

Result<YAML::Node> ParseStrictYaml(const std::string& content) {
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<YAML::Node> documents, ParseDocuments(content, true));
  return documents.front();
}

Result<std::vector<YAML::Node>> ParseStrictYamlDocuments(const std::string& content) {
  return ParseDocuments(content, false);
}

}  // namespace cincinnati::graphdata
