// What the agent's API reads and changes (agent_api.h serves it): the ClusterVersion
// document and its spec's merge patch, the components (ClusterOperators) and applied
// objects, and the loop's state. Each takes the agent's lock only as long as it reads
// or swaps its state; a patch that changes the spec is saved before it is answered.
#include <spdlog/spdlog.h>

#include "agent/agent.h"

namespace cincinnati::agent {

using kube::MergePatch;
using kube::JsonArray;
using kube::FindMember;

JsonValue Agent::ClusterVersionJson() {
  std::lock_guard lock(mu_);
  return ToJson(cv_);
}

void Agent::OnSaved(std::function<void(int64_t resource_version)> observer) {
  std::lock_guard lock(mu_);
  saving_.on_saved = std::move(observer);
}

int64_t Agent::resource_version() {
  std::lock_guard lock(mu_);
  return cv_.resource_version;
}

Result<JsonValue> Agent::PatchClusterVersion(const JsonValue& patch) {
  if (!patch.is_object()) return Status::InvalidArgument("the patch must be a JSON object (application/merge-patch+json)");
  std::lock_guard lock(mu_);
  JsonValue merged = MergePatch(ToJson(cv_), patch);
  const JsonValue* spec_json = FindMember(merged, "spec");
  if (!spec_json) return Status::InvalidArgument("spec: Required value");
  CINCINNATI_ASSIGN_OR_RETURN(ClusterVersionSpec spec, SpecFromJson(*spec_json));
  if (spec.cluster_id != cv_.spec.cluster_id && !cv_.spec.cluster_id.empty()) {
    // The CVO's API allows it, but a new ID makes the cluster a new one to every
    // update service; keep it stable.
    return Status::InvalidArgument("spec.clusterID: Forbidden: the cluster ID cannot change");
  }
  if (!(spec == cv_.spec)) {
    ClusterVersionSpec previous = cv_.spec;
    cv_.spec = std::move(spec);
    cv_.generation += 1;
    Status saved = Save();
    if (!saved.ok()) {
      cv_.spec = std::move(previous);
      cv_.generation -= 1;
      return saved;
    }
    retrieval_loop_.woken = update_loop_.woken = true;
    wake_.notify_all();
  }
  return ToJson(cv_);
}

Result<std::optional<JsonValue>> Agent::GetComponent(const std::string& name) { return components_->Get(name); }

Result<JsonArray> Agent::ListComponents() {
  ComponentList listed = components_->ListAll();
  for (const auto& [name, why] : listed.unreadable) spdlog::warn("ClusterOperator {} is left out: {}", name, why.message());
  return std::move(listed.objects);
}

Result<JsonValue> Agent::PutComponent(const std::string& name, const JsonValue& object) {
  auto stored = components_->Put(name, object);
  if (stored.ok()) Wake();
  return stored;
}

Result<JsonValue> Agent::PatchComponentStatus(const std::string& name, const JsonValue& patch) {
  auto updated = components_->PatchStatus(name, patch);
  if (updated.ok()) Wake();  // a component reporting progress: look again at once
  return updated;
}

Result<std::optional<JsonValue>> Agent::GetObject(const std::string& name) { return components_->GetObject(name); }

Result<std::vector<std::string>> Agent::ListObjects() { return components_->ListObjects(); }

UpdateProgress Agent::update_progress() { return runner_->snapshot().progress; }

LoopState Agent::state() {
  std::lock_guard lock(mu_);
  return state_;
}

bool Agent::ready() {
  std::lock_guard lock(mu_);
  return saving_.ready;
}

}  // namespace cincinnati::agent
