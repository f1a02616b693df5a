// The ClusterVersion document (config_api/cluster_version.h) in the agent's words: the
// agent keeps, serves and persists it, so its code says `ClusterVersion`, not
// `config_api::ClusterVersion`.
#pragma once

#include "agent/graph_client_names.h"
#include "agent/update_retriever.h"
#include "config_api/cluster_version.h"

namespace cincinnati::agent {

using config_api::ClusterVersion;
using config_api::ClusterVersionSpec;
using config_api::ClusterVersionStatus;
using config_api::ConditionToJson;
using config_api::DesiredUpdate;
using config_api::FromJson;
using config_api::ReleaseToJson;
using config_api::SignatureStore;
using config_api::SpecFromJson;
using config_api::SpecToJson;
using config_api::ToJson;
using config_api::UpdateHistoryEntry;
using kube::JsonValue;

}  // namespace cincinnati::agent
