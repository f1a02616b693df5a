// Salvaging a stored ClusterVersion that cannot be read whole: over the object store's
// size limit (an older agent kept everything a hostile update service sent), or not a
// valid document (edited by hand, a disk that lost writes). A state file that cannot be
// read is never a reason not to start: what can be read of it is kept, part by part, and
// what could not is named.
//
// The parts: metadata and spec, which must be readable (spec.clusterID is the
// cluster's identity to every update service: without it nothing is salvaged), then
// each member of status on its own. The retrieved lists (availableUpdates,
// conditionalUpdates) are always dropped: the next poll fetches them again.
//
// Memory: the file's bytes (one copy, padded for simdjson's on-demand reader, which
// skips the dropped lists without building them) plus the parts kept. A file over
// `max_bytes` is not read at all. Pure function of the file; never throws.
#pragma once

#include <string>
#include <vector>

#include "agent/cluster_version.h"
#include "core/status.h"

namespace cincinnati::agent {

inline constexpr size_t kMaxSalvageBytes = size_t{1} << 30;

struct SalvagedClusterVersion {
  ClusterVersion cv;
  std::vector<std::string> dropped;  // "status.availableUpdates", "status.history (why)", ...
};

Result<SalvagedClusterVersion> SalvageClusterVersion(const std::string& path, size_t max_bytes = kMaxSalvageBytes);

}  // namespace cincinnati::agent
