// AvailableUpdates: what a cluster at one version is offered by an update graph, by the
// cluster-version operator's rules (how it reads node metadata and computes updates):
//   - the current node is the first whose version equals the current one (SemVer
//     equality, build metadata ignored); none is VersionNotFound;
//   - recommended updates are the targets of the current node's edges (one hop);
//   - conditional updates come from conditionalEdges entries whose "from" equals the
//     current version's canonical string exactly, "to" naming a node by its exact
//     string (none: ResponseInvalid);
//   - an image both recommended and conditional stays only conditional; rules of an
//     unknown type or malformed (Always with promql, PromQL without a query) are
//     dropped, and a conditional update left with a risk without rules is dropped; an
//     image with more than one conditional update is dropped from them all;
//   - both lists sorted by descending SemVer.
// Beyond the CVO: a target reached by several edges is recommended once (the CVO would
// list it as often as the answer repeats the edge), and what is kept is bounded
// (KeptLimits): more updates, risks per update or bytes than the limits make the whole
// answer ResponseInvalid, naming the limit, before anything of it is copied. Work is
// linear in the answer's size (the CVO's search of the nodes for each conditional edge
// is quadratic), and memory apart from the graph is bounded by the limits.
// The metadata of the current node and of every target is interpreted: "url" must be a
// URL, "release.openshift.io/architecture" must be "multi" when present, and
// "io.openshift.upgrades.graph.release.channels" a comma-separated list without empty
// entries; any violation is ResponseInvalid naming the node.
//
// Pure functions on values; thread-safe; never throw.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graph_client/update_graph.h"

namespace cincinnati::graph_client {

// The reasons of the RetrievedUpdates condition, in the CVO's spelling.
namespace retrieval_reason {
inline constexpr std::string_view kNoUpstream = "NoUpstream";
inline constexpr std::string_view kInvalidURI = "InvalidURI";
inline constexpr std::string_view kInvalidID = "InvalidID";
inline constexpr std::string_view kNoArchitecture = "NoArchitecture";
inline constexpr std::string_view kNoCurrentVersion = "NoCurrentVersion";
inline constexpr std::string_view kNoChannel = "NoChannel";
inline constexpr std::string_view kInvalidCurrentVersion = "InvalidCurrentVersion";
inline constexpr std::string_view kInvalidRequest = "InvalidRequest";
inline constexpr std::string_view kRemoteFailed = "RemoteFailed";
inline constexpr std::string_view kResponseFailed = "ResponseFailed";
inline constexpr std::string_view kResponseInvalid = "ResponseInvalid";
inline constexpr std::string_view kVersionNotFound = "VersionNotFound";
inline constexpr std::string_view kUnknown = "Unknown";
}  // namespace retrieval_reason

// Why updates could not be retrieved: a reason above and a message.
struct RetrievalFailure {
  std::string reason;
  std::string message;
};

// A release as ClusterVersion's status shows it.
struct Release {
  std::string version;
  std::string image;
  std::string url;                    // empty: none
  std::vector<std::string> channels;  // sorted
  bool multi_architecture = false;
  bool operator==(const Release&) const = default;
};

struct ConditionalUpdate {
  Release release;
  std::vector<Risk> risks;
};

struct AvailableUpdates {
  Release current;  // the current node, for filling gaps in status.desired
  std::vector<Release> recommended;
  std::vector<ConditionalUpdate> conditional;
};

struct UpdatesQuery {
  Version current_version;
  bool desired_multi = false;  // spec.desiredUpdate.architecture == Multi
  bool current_multi = false;  // the running payload is multi-arch
};

// Updates for `query` in `graph`, or the failure as RetrievedUpdates would report it.
// `channel` only words the VersionNotFound message.
// What the agent keeps of one answer, and so what the ClusterVersion's status holds.
// The defaults leave room for any real channel (tens of updates, a few risks each, risk
// messages of a few hundred bytes). What is kept is counted as text; the Recommended
// conditions quote risks again and JSON escapes some bytes, so the stored status can be
// a few times larger: the agent caps the whole ClusterVersion apart (8 MiB, agent.cc).
struct KeptLimits {
  size_t max_updates = 1'000;           // recommended and conditional targets together
  size_t max_risks_per_update = 100;
  size_t max_field_bytes = 64 * 1024;   // a version, image, URL, channel, risk name, message, PromQL query
  size_t max_kept_bytes = 1024 * 1024;  // every update and risk kept, as text
};

struct UpdatesOrFailure {
  bool ok() const { return failure.reason.empty(); }
  AvailableUpdates updates;
  RetrievalFailure failure;
};
UpdatesOrFailure ComputeAvailableUpdates(const UpdateGraph& graph, const UpdatesQuery& query,
                                         std::string_view channel, const KeptLimits& limits = {});

// The node's metadata read into a Release (url, architecture "multi" only, channels).
Result<Release> ReleaseFromNode(const UpdateNode& node);

// Whether Go's url.Parse would accept `text`: no control characters or spaces in the
// host, valid %XX escapes outside the query, a scheme of letters, digits, '+', '-', '.'.
bool LooksLikeUrl(std::string_view text);

}  // namespace cincinnati::graph_client
