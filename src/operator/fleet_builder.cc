#include "operator/fleet_builder.h"

#include <fmt/format.h>

#include "kube/yaml_json.h"
#include "graph-data/yaml_events.h"

namespace cincinnati::upgrade {
namespace {

// As kube::YamlToJson: a value deeper than this is "nested too deeply".
constexpr size_t kMaxJsonDepth = 64;

}  // namespace

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

}  // namespace cincinnati::upgrade
