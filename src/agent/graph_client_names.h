// The names of the cluster-version operator's Cincinnati client (graph_client/) as the
// agent uses them: the agent's vocabulary (an UpdateGraph, a Release, the
// GraphRequestInputs of a poll) is the client's, declared here once so that agent code
// says `Release`, not `graph_client::Release`.
#pragma once

#include "graph_client/available_updates.h"
#include "graph_client/graph_request.h"
#include "graph_client/update_graph.h"

namespace cincinnati::agent {

namespace retrieval_reason = graph_client::retrieval_reason;

using graph_client::AnswerLimits;
using graph_client::AvailableUpdates;
using graph_client::ComputeAvailableUpdates;
using graph_client::ConditionalEdgeSet;
using graph_client::ConditionalUpdate;
using graph_client::GraphRequest;
using graph_client::GraphRequestInputs;
using graph_client::GraphUserAgent;
using graph_client::IsUuidV4;
using graph_client::KeptLimits;
using graph_client::kDefaultUpstream;
using graph_client::kGraphAccept;
using graph_client::LooksLikeUrl;
using graph_client::MatchingRule;
using graph_client::ParseUpdateGraph;
using graph_client::ParseUuid;
using graph_client::PrepareGraphRequest;
using graph_client::Release;
using graph_client::ReleaseFromNode;
using graph_client::RetrievalFailure;
using graph_client::Risk;
using graph_client::UpdateGraph;
using graph_client::UpdateNode;
using graph_client::UpdatesOrFailure;
using graph_client::UpdatesQuery;

}  // namespace cincinnati::agent
