// What the policy engine knows about a cluster beyond its query: the customer who owns
// it and its labels, from a cluster directory (directory/cluster_directory.h).
#pragma once

#include <map>
#include <string>

namespace cincinnati {

struct ClusterInfo {
  std::string customer;
  std::map<std::string, std::string> labels;
  bool operator==(const ClusterInfo&) const = default;
};

}  // namespace cincinnati
