// ClusterVersion: one cluster's version state, with the field names of OpenShift's
// config.openshift.io/v1 ClusterVersion (the object `oc adm upgrade` reads and writes).
//
//   spec:   clusterID (UUID v4), channel, upstream, desiredUpdate {version, image,
//           force, architecture}, signatureStores [{url}]
//   status: desired (a Release), history [{state Partial|Completed, startedTime,
//           completionTime, version, image, verified, acceptedRisks}], observedGeneration,
//           versionHash, availableUpdates, conditionalUpdates [{release, risks,
//           conditions}], conditions [{type, status, lastTransitionTime, reason, message}]
//
// ToJson writes the Kubernetes shape (apiVersion, kind, metadata, spec, status;
// availableUpdates is null when empty, as the operator writes it). SpecFromJson reads
// a spec strictly: a field of the wrong type or an invalid value is an error naming
// the field (spec.clusterID, spec.desiredUpdate.image, ...); unknown fields are errors
// too, as in a Kubernetes API with field validation. FromJson reads a whole document
// back (the agent's own persisted state). Plain values; never throw.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/graph_client_names.h"
#include "agent/update_retriever.h"
#include "kube/json_value.h"

namespace cincinnati::agent {

using kube::JsonValue;

struct DesiredUpdate {
  std::string version;
  std::string image;
  bool force = false;
  std::string architecture;  // "" or "Multi"
  bool operator==(const DesiredUpdate&) const = default;
};

struct SignatureStore {
  std::string url;
  bool operator==(const SignatureStore&) const = default;
};

struct ClusterVersionSpec {
  std::string cluster_id;
  std::string channel;
  std::string upstream;
  std::optional<DesiredUpdate> desired_update;
  std::vector<SignatureStore> signature_stores;
  bool operator==(const ClusterVersionSpec&) const = default;
};

struct UpdateHistoryEntry {
  std::string state;  // "Partial" or "Completed"
  std::string started_time;
  std::string completion_time;  // "" while Partial
  std::string version;
  std::string image;
  bool verified = false;
  std::string accepted_risks;
};

struct ClusterVersionStatus {
  Release desired;
  std::vector<UpdateHistoryEntry> history;
  int64_t observed_generation = 0;
  std::string version_hash;
  std::vector<Release> available_updates;
  std::vector<ConditionalUpdateStatus> conditional_updates;
  std::vector<Condition> conditions;
};

struct ClusterVersion {
  int64_t generation = 1;              // bumped by every spec change
  int64_t resource_version = 1;        // bumped by every write
  std::string creation_timestamp;
  std::string uid;
  ClusterVersionSpec spec;
  ClusterVersionStatus status;

  const Condition* FindCondition(std::string_view type) const;
  // Sets a condition, keeping its lastTransitionTime when the status is unchanged.
  void SetCondition(Condition condition);
};

JsonValue ToJson(const ClusterVersion& cv);
JsonValue SpecToJson(const ClusterVersionSpec& spec);
Result<ClusterVersionSpec> SpecFromJson(const JsonValue& spec);
Result<ClusterVersion> FromJson(const JsonValue& document);

JsonValue ReleaseToJson(const Release& release);
JsonValue ConditionToJson(const Condition& condition);

}  // namespace cincinnati::agent
