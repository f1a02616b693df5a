#include "operator/policy_service.h"

#include <fmt/format.h>

#include <algorithm>

#include "kube/json_value.h"
#include "operator/notifications.h"
#include "operator/scheduler.h"
#include "operator/validation.h"
#include "http_server/query.h"

namespace cincinnati::upgrade {
namespace {

using kube::JsonValue;
using kube::JsonObject;
using kube::JsonArray;
using kube::FindMember;
using kube::TextOf;
using kube::ItemsOf;

std::string Text(const JsonValue* object, std::string_view key) {
  const JsonValue* v = object && object->is_object() ? FindMember(*object, key) : nullptr;
  return v && v->is_string() ? TextOf(*v) : "";
}

Result<JsonValue> Document(const std::string& body, const std::string& url) {
  auto doc = kube::ParseJson(body);
  if (!doc.ok() || !doc->is_object()) return Status::InvalidArgument(fmt::format("{}: the answer is not a JSON object", url));
  return doc;
}

Result<const JsonArray*> Items(const JsonValue& doc, const std::string& url) {
  const JsonValue* items = FindMember(doc, "items");
  if (!items) {
    static const JsonArray kNone;
    return &kNone;
  }
  if (!items->is_array()) return Status::InvalidArgument(fmt::format("{}: items is not a list", url));
  return &ItemsOf(*items);
}

}  // namespace

std::string PolicyService::ClusterUrl(const std::string& cluster_id) const {
  std::string base = base_;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/api/clusters_mgmt/v1/clusters/" + cluster_id;
}

Result<RemoteCluster> PolicyService::FindCluster(const std::string& external_id) {
  std::string base = base_;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string url = base + "/api/clusters_mgmt/v1/clusters?" +
                          http_server::EncodeQuery({{"search", fmt::format("external_id = '{}'", external_id)}, {"size", "1"}});
  CINCINNATI_ASSIGN_OR_RETURN(std::string body, CallPeer(peer_, "GET", url));
  CINCINNATI_ASSIGN_OR_RETURN(JsonValue doc, Document(body, url));
  CINCINNATI_ASSIGN_OR_RETURN(const JsonArray* items, Items(doc, url));
  if (items->size() != 1) {
    return Status::NotFound(fmt::format("OCM did not return a valid cluster ID: {} clusters with external_id {}", items->size(), external_id));
  }
  const JsonValue& c = (*items)[0];
  RemoteCluster out;
  out.id = Text(&c, "id");
  if (out.id.empty()) return Status::InvalidArgument(fmt::format("{}: the cluster has no id", url));
  if (std::string group = Text(FindMember(c, "version"), "channel_group"); !group.empty()) out.channel_group = group;
  if (const JsonValue* grace = FindMember(c, "node_drain_grace_period"); grace && grace->is_object()) {
    const JsonValue* value = FindMember(*grace, "value");
    if (value && value->is_number()) out.node_drain_minutes = static_cast<int>(std::clamp<double>(value->to_number<double>(), 0, 1e6));
  }
  return out;
}

Result<UpgradePolicy> PolicyService::State(const std::string& cluster_id, const std::string& policy_id) {
  const std::string url = ClusterUrl(cluster_id) + "/upgrade_policies/" + policy_id + "/state";
  CINCINNATI_ASSIGN_OR_RETURN(std::string body, CallPeer(peer_, "GET", url));
  CINCINNATI_ASSIGN_OR_RETURN(JsonValue doc, Document(body, url));
  UpgradePolicy p;
  p.id = policy_id;
  p.state = Text(&doc, "value");
  p.description = Text(&doc, "description");
  return p;
}

Result<std::vector<UpgradePolicy>> PolicyService::Policies(const std::string& cluster_id) {
  const std::string url = ClusterUrl(cluster_id) + "/upgrade_policies";
  CINCINNATI_ASSIGN_OR_RETURN(std::string body, CallPeer(peer_, "GET", url));
  CINCINNATI_ASSIGN_OR_RETURN(JsonValue doc, Document(body, url));
  CINCINNATI_ASSIGN_OR_RETURN(const JsonArray* items, Items(doc, url));
  std::vector<UpgradePolicy> out;
  for (const auto& item : *items) {
    UpgradePolicy p;
    p.id = Text(&item, "id");
    p.version = Text(&item, "version");
    p.next_run = Text(&item, "next_run");
    if (p.id.empty()) return Status::InvalidArgument(fmt::format("{}: a policy has no id", url));
    CINCINNATI_ASSIGN_OR_RETURN(UpgradePolicy state, State(cluster_id, p.id));
    p.state = state.state;
    p.description = state.description;
    out.push_back(std::move(p));
  }
  return out;
}

Status PolicyService::SetState(const std::string& cluster_id, const std::string& policy_id, const std::string& value,
                               const std::string& description) {
  const std::string url = ClusterUrl(cluster_id) + "/upgrade_policies/" + policy_id + "/state";
  JsonValue body = JsonObject({{"value", JsonValue(value)}, {"description", JsonValue(description)}});
  return CallPeer(peer_, "PATCH", url, kube::WriteJson(body)).status();
}

std::optional<UpgradePolicy> ActionablePolicy(const std::vector<UpgradePolicy>& policies) {
  std::optional<UpgradePolicy> best;
  for (const auto& p : policies) {
    std::string state = p.state;
    std::transform(state.begin(), state.end(), state.begin(), [](unsigned char c) { return std::tolower(c); });
    if (state == "pending" || state == "completed" || state == "cancelled" || p.version.empty()) continue;
    auto at = ParseTime(p.next_run);
    if (!at.ok()) continue;
    if (!best || *at < *ParseTime(best->next_run)) best = p;
  }
  return best;
}

UpgradeConfigSpec SpecFromPolicy(const RemoteCluster& cluster, const UpgradePolicy& policy, UpgradeType type) {
  UpgradeConfigSpec spec;
  spec.type = type;
  spec.desired.version = policy.version;
  spec.desired.channel = InferChannel(cluster.channel_group + "-", policy.version);
  spec.upgrade_at = FormatTime(*ParseTime(policy.next_run));
  spec.pdb_force_drain_timeout = cluster.node_drain_minutes;
  spec.capacity_reservation = true;
  return spec;
}

void PolicyIndex::Set(const std::string& cluster, const std::string& remote_id, const std::string& policy_id) {
  std::lock_guard lock(mu_);
  entries_[cluster] = {remote_id, policy_id};
}

std::optional<std::pair<std::string, std::string>> PolicyIndex::Get(const std::string& cluster) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(cluster);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

Status PolicyStateNotifier::Send(const Notification& n) {
  const std::string target = PolicyStateFor(n.event);
  if (target.empty()) return Status::OK();  // a service-log-only event
  auto ids = index_.Get(n.cluster);
  if (!ids) return Status::OK();  // not from a policy
  CINCINNATI_ASSIGN_OR_RETURN(UpgradePolicy current, service_.State(ids->first, ids->second));
  std::string from = current.state;
  // "delayed" read back with a description without "retry" was a skip (as the MUO reads it).
  if (from == "delayed" && current.description.find("retry") == std::string::npos) from = "skipped";
  if (!PolicyTransitionAllowed(from, target)) return Status::OK();
  return service_.SetState(ids->first, ids->second, target, n.description);
}

}  // namespace cincinnati::upgrade
