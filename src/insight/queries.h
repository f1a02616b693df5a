// The `path` and `explain` questions as clients ask them (query parameters of
// `{prefix}/v1/path` and `{prefix}/v1/explain`, or CLI flags), checked, and answered on
// a graph builder's graph with a policy chain.
//
//   path:    channel=C[,C2...] from=V to=V [arch=A] [id=UUID] [accept=RISK,...|*] [k=N]
//   explain: channel=C version=V [to=V] [arch=A] [id=UUID]
// Other parameters are passed to the chain unchanged (a policy engine's mandatory
// client parameters, for one). A missing parameter is MissingParams naming it, a bad
// one InvalidParams naming it (the reference's error kinds). Several channels let a
// path cross channels (e.g. EUS to EUS through the odd minor's channel): each hop
// names the channel it is taken in. Each channel's view is the one the cluster at
// `from` would be served in that channel. When the chain opens with the channel and
// arch filters, the views are made from the builder graph narrowed once to the
// releases of the query's channels and arch (the same views: the filters keep releases
// one by one); the builder's records are read only to say what blocks a path.
// Thread-safe; pure given the chain's clock.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/transform.h"
#include "insight/explain.h"
#include "insight/update_paths.h"

namespace cincinnati::insight {

inline constexpr size_t kMaxAlternatives = 20;

struct PathQuery {
  std::vector<std::string> channels;
  std::string from, to, arch = "amd64", id;
  PathOptions options;
  Parameters other;  // passed to the chain as they are
};

Result<PathQuery> ParsePathQuery(const Parameters& params);
Result<ExplainRequest> ParseExplainQuery(const Parameters& params);

// The cluster's entitlements in one channel (the policy engine asks its directory).
using EntitlementsFor = std::function<ClusterEntitlements(std::string_view channel)>;

// Each channel's view for the query, as PlanPaths reads them: the chain's answer on the
// builder graph for the cluster at `from` in that channel.
Result<std::vector<ChannelView>> PathViews(const TransformChain& chain, const Graph& builder_graph,
                                           const PathQuery& query, const EntitlementsFor& entitlements = {});

Result<PathAnswer> PlanPaths(const TransformChain& chain, const Graph& builder_graph, const PathQuery& query,
                             const EntitlementsFor& entitlements = {});

}  // namespace cincinnati::insight
