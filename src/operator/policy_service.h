// The remote policy source (the MUO's OCM provider): an upgrade-policy
// service with the paths of OpenShift Cluster Manager (OCM), so that the operator can
// be driven by OCM or by anything that speaks its API:
//   GET   {base}/api/clusters_mgmt/v1/clusters?search=external_id = '<clusterID>'&size=1
//   GET   {base}/api/clusters_mgmt/v1/clusters/<id>/upgrade_policies
//   GET   {base}/api/clusters_mgmt/v1/clusters/<id>/upgrade_policies/<pid>/state
//   PATCH {base}/api/clusters_mgmt/v1/clusters/<id>/upgrade_policies/<pid>/state  {value, description}
// A bearer token is read from a file on every call. Every policy is considered (the
// reference reads only the first page of one).
//
// PolicyStateNotifier tells the service how an upgrade goes (started, delayed,
// completed, failed) as a Notifier, moving a policy only along the reference's allowed
// transitions.
//
// Thread-safe; never throws; errors name the URL.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "operator/http_call.h"
#include "operator/ports.h"
#include "operator/upgrade_config.h"

namespace cincinnati::upgrade {

struct RemoteCluster {
  std::string id;
  std::string channel_group = "stable";
  int node_drain_minutes = 0;
};

struct UpgradePolicy {
  std::string id;
  std::string version;
  std::string next_run;  // RFC 3339
  std::string state;     // scheduled, started, delayed, ..., pending, completed, cancelled
  std::string description;
};

class PolicyService {
 public:
  PolicyService(std::string base_url, HttpPeer peer) : base_(std::move(base_url)), peer_(std::move(peer)) {}
  Result<RemoteCluster> FindCluster(const std::string& external_id);
  Result<std::vector<UpgradePolicy>> Policies(const std::string& cluster_id);  // with their states
  Result<UpgradePolicy> State(const std::string& cluster_id, const std::string& policy_id);
  Status SetState(const std::string& cluster_id, const std::string& policy_id, const std::string& value, const std::string& description);

 private:
  std::string ClusterUrl(const std::string& cluster_id) const;
  std::string base_;
  HttpPeer peer_;
};

// The policy to act on: the earliest next_run among those that are not pending,
// completed or cancelled and name a version; nullopt when there is none.
std::optional<UpgradePolicy> ActionablePolicy(const std::vector<UpgradePolicy>& policies);
// The OCM provider's mapping of a policy to a spec: channel <group>-<major>.<minor> (an EUS group
// rounds an odd minor up), upgradeAt = next_run, PDBForceDrainTimeout = the cluster's
// node drain grace period, capacityReservation true.
UpgradeConfigSpec SpecFromPolicy(const RemoteCluster& cluster, const UpgradePolicy& policy, UpgradeType type);

// Which remote cluster and policy a fleet cluster's config came from (kept by the
// operator as it syncs).
class PolicyIndex {
 public:
  void Set(const std::string& cluster, const std::string& remote_id, const std::string& policy_id);
  std::optional<std::pair<std::string, std::string>> Get(const std::string& cluster);

 private:
  std::mutex mu_;
  std::map<std::string, std::pair<std::string, std::string>> entries_;
};

class PolicyStateNotifier : public Notifier {
 public:
  PolicyStateNotifier(PolicyService& service, PolicyIndex& index) : service_(service), index_(index) {}
  Status Send(const Notification& notification) override;

 private:
  PolicyService& service_;
  PolicyIndex& index_;
};

}  // namespace cincinnati::upgrade
