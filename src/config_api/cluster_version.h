// ClusterVersion: one cluster's version state, with the field names of OpenShift's
// config.openshift.io/v1 ClusterVersion (the object `oc adm upgrade` reads and writes).
// The agent keeps and serves it; the operator reads it from the agent's API. One model
// and one decoder for both.
//
//   spec:   clusterID (UUID v4), channel, upstream, desiredUpdate {version, image,
//           force, architecture}, signatureStores [{url}]
//   status: desired (a Release), history [{state Partial|Completed, startedTime,
//           completionTime, version, image, verified, acceptedRisks}], observedGeneration,
//           versionHash, availableUpdates, conditionalUpdates [{release, risks,
//           conditions}], conditions [{type, status, lastTransitionTime, reason, message}]
//
// ToJson writes the Kubernetes shape (apiVersion, kind, metadata, spec, status;
// availableUpdates is null when empty, as the cluster-version operator writes it).
// SpecFromJson reads a spec strictly: a field of the wrong type or an invalid value is
// an error naming the field (spec.clusterID, spec.desiredUpdate.image, ...); unknown
// fields are errors too, as in a Kubernetes API with field validation. FromJson reads a
// whole document: kOwnState (the agent's own persisted state) reads the spec that
// strictly; kPeer (a document another process served, as the operator reads an agent's)
// checks only the types of the fields it reads and ignores the rest, as a Kubernetes
// client does. Plain values; never throw.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "graph_client/available_updates.h"
#include "graph_client/update_graph.h"
#include "kube/json_value.h"

namespace cincinnati::config_api {

using graph_client::Release;
using graph_client::Risk;
using kube::JsonValue;

// One condition in Kubernetes' shape.
struct Condition {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  std::string last_transition_time;  // RFC 3339
  bool operator==(const Condition&) const = default;
};

struct ConditionalUpdateStatus {
  Release release;
  std::vector<Risk> risks;
  std::vector<Condition> conditions;  // [Recommended]
};

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
enum class ReadAs { kOwnState, kPeer };
Result<ClusterVersion> FromJson(const JsonValue& document, ReadAs read_as = ReadAs::kOwnState);

JsonValue ReleaseToJson(const Release& release);
JsonValue ConditionToJson(const Condition& condition);

}  // namespace cincinnati::config_api
