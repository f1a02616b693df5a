// UpdateRunner, applying: the history entry of the update, the plan's groups in order
// with the components' progress, the hand-over to the new release's agent, and the
// completion (update_runner.h has the contract; update_runner.cc the phases before).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <random>

#include "agent/update_phases.h"
#include "agent/update_runner.h"
#include "core/metadata_keys.h"
#include "core/strings.h"
#include "graph-data/time_format.h"

namespace cincinnati::agent {
namespace {
using kube::FindMember;
using kube::TextOf;
using kube::ItemsOf;

namespace fs = std::filesystem;

// The CVO keeps 100 entries too (it ranks which to drop); here the newest 99 and the
// initial one stay.
constexpr size_t kMaxHistory = 100;

// 128 random bits, in hex: names one hand-over.
std::string NewHandOverId() {
  std::random_device rd;
  std::string out;
  for (int i = 0; i < 4; ++i) out += fmt::format("{:08x}", rd());
  return out;
}

}  // namespace

void UpdateRunner::EnsureStarted(ClusterVersion& cv) {
  auto& history = cv.status.history;
  if (history.empty() || history.front().image != progress_.image) {
    history.insert(history.begin(),
                   UpdateHistoryEntry{"Partial", progress_.started, "", progress_.version, progress_.image,
                                      progress_.payload.verified, progress_.payload.accepted_risks});
    if (history.size() > kMaxHistory) history.erase(history.begin() + (kMaxHistory - 1), history.end() - 1);
  }
}

bool UpdateRunner::ApplyGroups(UpdateStepResult& result) {
  if (!PayloadStillWhole(result)) return false;
  auto loaded = Payload(progress_.payload.dir);
  if (!loaded.ok()) {
    result.status.failure = UpdateStatus::Failure{"UpdatePayloadIntegrity", loaded.status().message()};
    result.busy = true;
    return false;
  }
  const auto& plan = (*loaded)->plan;
  const int64_t total = static_cast<int64_t>(plan.size());
  auto count = [&] {  // manifests of the groups done, and of the others
    int64_t applied = 0, pending = 0;
    for (int64_t g = 0; g < total; ++g) {
      for (const auto& [component, indexes] : plan[static_cast<size_t>(g)].components) {
        (g < progress_.applying.next_group ? applied : pending) += static_cast<int64_t>(indexes.size());
      }
    }
    std::lock_guard lock(snapshot_mu_);
    snapshot_.applied = applied, snapshot_.pending = pending;
  };
  count();
  while (progress_.applying.next_group < total) {
    const ApplyGroup& group = plan[static_cast<size_t>(progress_.applying.next_group)];
    std::vector<std::string> waiting, degraded;
    for (const auto& [component, indexes] : group.components) {
      for (size_t i : indexes) {
        const Manifest& m = (*loaded)->manifests[i];
        auto level = components_.Apply(m, progress_.version);
        if (!level.ok()) {
          result.status.failure = UpdateStatus::Failure{"ApplyFailed", level.status().message()};
          result.busy = true;
          return false;
        }
        if (level->done) continue;
        (level->degraded ? degraded : waiting).push_back(m.name);
        break;  // a component's manifests go in order
      }
    }
    if (waiting.empty() && degraded.empty()) {
      // The agent's own run level 00 (its Deployment): later manifests of its component
      // (a verification ConfigMap at 90...) are applied by the new agent like any other.
      const bool self = group.run_level == "00" &&
                        std::all_of(group.components.begin(), group.components.end(),
                                    [](const auto& c) { return c.first == kSelfComponent; });
      if (self && options_.hand_over) {
        HandOver(**loaded, group, result);
        return false;
      }
      ++progress_.applying.next_group;
      progress_.applying.group_started = Now();
      if (!Commit(result)) return false;
      count();
      continue;
    }
    result.status.progress = UpdateStatus::Progress::kApplying;
    result.status.target = progress_.version;
    result.status.done = progress_.applying.next_group;
    result.status.total = total;
    result.status.waiting_on = degraded;
    result.status.waiting_on.insert(result.status.waiting_on.end(), waiting.begin(), waiting.end());
    auto started = graphdata::ParseDateTime(progress_.applying.group_started);
    const bool late = started.ok() && std::chrono::duration_cast<std::chrono::seconds>(clock_.Now().time_since_epoch()).count() - *started > options_.component_timeout.count();
    if (!degraded.empty()) {
      result.status.failure =
          UpdateStatus::Failure{"ClusterOperatorDegraded", fmt::format("Cluster operator {} is degraded", fmt::join(degraded, ", "))};
    } else if (late) {
      result.status.failure = UpdateStatus::Failure{
          "ClusterOperatorNotAvailable", fmt::format("Cluster operator {} has not yet reported success after {} s",
                                                     fmt::join(waiting, ", "), options_.component_timeout.count())};
    } else {
      result.status.failure.reset();
    }
    WatchAttempt(degraded, waiting, late, result);
    result.busy = true;
    return false;
  }
  return true;
}

bool UpdateRunner::HandOver(const Loaded& loaded, const ApplyGroup& group, UpdateStepResult& result) {
  if (!MoveUpdatePhase(progress_, UpdatePhase::kHandingOver, result.status, HandingOverPhase{NewHandOverId()})) return false;
  ++progress_.applying.hand_over_attempts;
  if (!Commit(result)) return false;  // no hand-over the new agent could not resume
  handing_over_ = true;
  result.hand_over_to = HandOverBinary(loaded, group);
  result.hand_over_id = progress_.handing_over()->id;
  result.status.progress = UpdateStatus::Progress::kHandingOver;
  result.status.target = progress_.version;
  return true;
}

std::string UpdateRunner::HandOverBinary(const Loaded& loaded, const ApplyGroup& group) const {
  // The payload's agent Deployment may name the binary (its first container's command);
  // a path that is not an executable file here means the same binary.
  for (const auto& [component, indexes] : group.components) {
    for (size_t i : indexes) {
      const Manifest& m = loaded.manifests[i];
      if (m.kind != "Deployment") continue;
      const JsonValue* spec = FindMember(m.object, "spec");
      const JsonValue* tmpl = spec ? FindMember(*spec, "template") : nullptr;
      const JsonValue* pod = tmpl ? FindMember(*tmpl, "spec") : nullptr;
      const JsonValue* containers = pod ? FindMember(*pod, "containers") : nullptr;
      if (!containers || !containers->is_array() || ItemsOf(*containers).empty()) continue;
      const JsonValue* command = FindMember(ItemsOf(*containers)[0], "command");
      if (!command || !command->is_array() || ItemsOf(*command).empty() || !ItemsOf(*command)[0].is_string()) continue;
      const std::string& path = TextOf(ItemsOf(*command)[0]);
      if (!path.empty() && path[0] == '/' && env::DefaultFileSystem().IsExecutable(path)) return path;
    }
  }
  return "";
}

bool UpdateRunner::Complete(ClusterVersion& cv, UpdateStepResult& result) {
  if (progress_.phase != UpdatePhase::kCompleted) {
    // Saved before the history says so: a restart never finds Completed in the history
    // of an update its progress has not finished.
    const std::string left =
        progress_.payload.running_dir != progress_.payload.dir ? progress_.payload.running_dir : "";
    progress_.payload.running_dir = progress_.payload.dir;
    if (!MoveUpdatePhase(progress_, UpdatePhase::kCompleted, result.status)) return false;
    progress_.attempt.degraded_since.clear();
    EndAttempt("Completed", "", "");  // saved with the phase
    if (!Commit(result)) return false;
    if (!left.empty()) {
      env::RemoveLeftover(options_.files ? *options_.files : env::DefaultFileSystem(), left, "the payload of the release left");
    }
  }
  const std::string now = Now();
  auto& history = cv.status.history;
  if (!history.empty() && history.front().image == progress_.image && history.front().state != "Completed") {
    history.front().state = "Completed";
    history.front().completion_time = now;
  }
  if (cv.status.desired.image != progress_.image) {
    Release release;
    release.version = progress_.version;
    release.image = progress_.image;
    if (loaded_) {
      const auto& metadata = loaded_->info.metadata.metadata;
      if (auto it = metadata.find("url"); it != metadata.end()) release.url = it->second;
      if (auto it = metadata.find(PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix)); it != metadata.end()) {
        for (std::string_view c : Split(it->second, ',')) {
          if (!c.empty()) release.channels.emplace_back(c);
        }
        std::sort(release.channels.begin(), release.channels.end());
      }
    }
    cv.status.desired = release;
  }
  result.status.progress = UpdateStatus::Progress::kCompleted;
  result.status.target = progress_.version;
  result.status.failure.reset();
  return true;
}

}  // namespace cincinnati::agent
