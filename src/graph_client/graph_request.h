// GraphRequest: the checks the cluster-version operator makes before it asks for a
// graph, and the request URL it then uses.
//
// The checks run in the CVO's order and stop at the first failure: NoUpstream,
// InvalidURI, InvalidID, NoArchitecture, NoCurrentVersion, NoChannel,
// InvalidCurrentVersion; each failure carries the CVO's message. The URL is the upstream
// verbatim (nothing appended to its path) with arch, channel, id and version set in its
// query, every key sorted and encoded again; other parameters the upstream carries are
// kept.
//
// Pure functions; thread-safe; never throw.
#pragma once

#include <string>
#include <string_view>

#include "graph_client/available_updates.h"

namespace cincinnati::graph_client {

inline constexpr std::string_view kDefaultUpstream = "https://api.openshift.com/api/upgrades_info/v1/graph";
inline constexpr std::string_view kGraphAccept = "application/json";

struct GraphRequestInputs {
  std::string upstream;    // spec.upstream, or the agent's --update-service
  std::string cluster_id;  // spec.clusterID
  std::string arch;        // "amd64", ..., or "multi"
  std::string version;     // the version the agent reconciles
  std::string channel;     // spec.channel
};

struct GraphRequest {
  bool ok() const { return failure.reason.empty(); }
  std::string url;
  Version version;  // the current version, parsed
  RetrievalFailure failure;
};

GraphRequest PrepareGraphRequest(const GraphRequestInputs& inputs);

// Go's uuid.Parse on the forms a ClusterVersion holds: 36 characters, hex digits and
// dashes at 8-4-4-4-12 (also "urn:uuid:" prefixed or in braces). The error is Go's.
Status ParseUuid(std::string_view text);
// The stricter API rule for spec.clusterID: RFC 4122 variant, version 4, lower case.
bool IsUuidV4(std::string_view text);

// "ClusterVersionOperator/<version>": the User-Agent of a graph request.
std::string GraphUserAgent();

}  // namespace cincinnati::graph_client
