// FleetBuilder: the fleet file's clusters (fleet_file.h), built from the document's nodes
// as the reader (fleet_file.cc) hands them over, the file's own and those aliases stand
// for, with the faults a JSON DOM of the document (kube/yaml_json.h) and the checks on it
// would find. Not thread-safe; never throws but for memory.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "operator/fleet_file.h"
#include "operator/name_index.h"

namespace cincinnati::upgrade {

// How the JSON DOM (kube/yaml_json.h) types a scalar; the fleet file only wants strings.
enum class ScalarType : uint8_t { kNull, kString, kOther };
// A scalar's type: `plain` for the plain style, `tagged` for an explicit tag.
ScalarType TypeOf(std::string_view text, bool plain, bool tagged);

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

}  // namespace cincinnati::upgrade
