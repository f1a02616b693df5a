#include "agent/update_runner.h"

#include "agent/update_phases.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>

#include <filesystem>

#include <spdlog/spdlog.h>

#include "agent/preconditions.h"
#include "core/metadata_keys.h"
#include "core/strings.h"
#include "graph-data/time_format.h"
#include "registry/reference.h"

namespace cincinnati::agent {
namespace {

namespace fs = std::filesystem;
constexpr char kProgressKind[] = "agentstate";
constexpr char kProgressName[] = "update";

void AddRisk(std::string& risks, const std::string& risk) {
  if (!risks.empty()) risks += "\n";
  risks += risk;
}

// A hand-over this group may start before the agent gives up handing over and goes on
// itself (a successor that never takes over, say a wrapper that drops the id).
constexpr int64_t kMaxHandOverAttempts = 3;

int64_t UnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

UpdateRunner::UpdateRunner(ObjectStore& store, ComponentObjects& components, UpdateOptions options, env::Clock& clock,
                           std::stop_token stop, StorageHealth* storage)
    : store_(store),
      components_(components),
      options_(std::move(options)),
      clock_(clock),
      stop_(std::move(stop)),
      storage_(storage) {}

std::string UpdateRunner::Now() const { return graphdata::FormatDateTime(UnixSeconds(clock_.Now())); }

Status UpdateRunner::Load() {
  CINCINNATI_ASSIGN_OR_RETURN(auto stored, store_.Get(kProgressKind, kProgressName));
  if (!stored) return Status::OK();
  auto progress = UpdateProgressFromJson(*stored);
  if (!progress.ok()) return progress.status().WithContext("the stored update progress");
  progress_ = std::move(progress).value();
  saved_ = progress_;
  std::lock_guard lock(snapshot_mu_);
  snapshot_.progress = progress_;
  return Status::OK();
}

Status UpdateRunner::Save() {
  Status s = store_.Put(kProgressKind, kProgressName, ToJson(progress_));
  if (storage_ && storage_->Record(StorageArea::kState, s)) {
    if (s.ok()) {
      spdlog::info("the update's progress is saved again");
    } else {
      spdlog::error("cannot save the update's progress: {}", s.message());
    }
  }
  if (!s.ok()) return s;
  saved_ = progress_;
  std::lock_guard lock(snapshot_mu_);
  snapshot_.progress = progress_;
  if (progress_.phase != UpdatePhase::kApplying && progress_.phase != UpdatePhase::kHandingOver) {
    snapshot_.applied = snapshot_.pending = 0;
  }
  return s;
}

bool UpdateRunner::Commit(UpdateStepResult& result) {
  Status s = Save();
  if (s.ok()) return true;
  // Not saved: nothing acts on the new phase. The store's phase comes back, and the
  // step is tried again soon (the disk may have room by then).
  if (saved_.image != progress_.image || saved_.payload.dir != progress_.payload.dir) loaded_.reset();
  progress_ = saved_;
  result.status.failure = UpdateStatus::Failure{
      "AgentStateNotSaved", fmt::format("The update waits: the agent cannot save its progress: {}", s.message())};
  result.busy = true;
  return false;
}

UpdateRunner::Snapshot UpdateRunner::snapshot() const {
  std::lock_guard lock(snapshot_mu_);
  return snapshot_;
}

bool UpdateRunner::Start(const ClusterVersion& cv, const std::optional<ResolvedTarget>& target, bool force,
                         UpdateStepResult& result) {
  UpdateProgress next;  // a new target starts over, from the signatures
  next.image = target->release.image;
  next.version = target->release.version;
  next.force = force;
  next.started = Now();
  next.payload.running_dir = progress_.payload.running_dir;
  next.last_refusal = progress_.last_refusal;
  BeginAttempt(next, cv);
  if (!MoveUpdatePhase(next, UpdatePhase::kVerifying, result.status)) return false;
  const UpdatePayload& old = progress_.payload;
  const std::string abandoned = !old.dir.empty() && old.dir != old.running_dir ? old.dir : "";
  progress_ = std::move(next);
  loaded_.reset();
  if (!Commit(result)) return false;
  if (!abandoned.empty()) {
    env::RemoveLeftover(options_.files ? *options_.files : env::DefaultFileSystem(), abandoned, "an abandoned target's payload");
  }
  return true;
}

UpdateStepResult UpdateRunner::Step(ClusterVersion& cv, const std::optional<ResolvedTarget>& target, bool force) {
  UpdateStepResult result;
  const bool applying = progress_.phase == UpdatePhase::kApplying || progress_.phase == UpdatePhase::kHandingOver;
  const bool under_way = applying || progress_.phase == UpdatePhase::kVerifying ||
                         progress_.phase == UpdatePhase::kDownloading || progress_.phase == UpdatePhase::kLoading;
  if (under_way && progress_.attempt.id.empty()) {
    BeginAttempt(progress_, cv);  // begun by an agent without reports (a hand-over from one): adopted
  }
  if (target && target->release.image != progress_.image) {
    if (!Start(cv, target, force, result)) return result;
  } else if (!target && !applying) {
    if (progress_.phase == UpdatePhase::kCompleted && cv.status.desired.image == progress_.image) Complete(cv, result);
    if (progress_.phase != UpdatePhase::kIdle && progress_.phase != UpdatePhase::kCompleted) {
      if (MoveUpdatePhase(progress_, UpdatePhase::kIdle, result.status)) Commit(result);  // the request went away
    }
    return result;
  } else if (target && force != progress_.force && progress_.phase == UpdatePhase::kFailed) {
    if (!Start(cv, target, force, result)) return result;  // force added (or removed): try again at once
  }
  if (progress_.phase == UpdatePhase::kFailed) {
    if (const FailedPhase* failed = progress_.failed(); failed && UnixSeconds(clock_.Now()) < failed->retry_at) return result;
    // A retry starts over: what the failed attempt found or let through is not kept.
    if (!MoveUpdatePhase(progress_, UpdatePhase::kVerifying, result.status)) return result;
    progress_.payload.verified = false;
    progress_.payload.accepted_risks.clear();
    progress_.started = Now();
    BeginAttempt(progress_, cv);  // a retry is a new attempt, with its own report
    if (!Commit(result)) return result;
  }
  if (progress_.phase == UpdatePhase::kCompleted) {
    Complete(cv, result);
    return result;
  }
  result.updating = true;
  const std::string version = progress_.version.empty() ? progress_.image : progress_.version;
  if (progress_.phase == UpdatePhase::kVerifying || progress_.phase == UpdatePhase::kDownloading) {
    result.status.progress = UpdateStatus::Progress::kDownloading;
    result.status.target = version;
  }
  if (progress_.phase == UpdatePhase::kVerifying && !Verify(cv, result)) return result;
  if (progress_.phase == UpdatePhase::kDownloading && !Download(result)) return result;
  if (progress_.phase == UpdatePhase::kLoading && !LoadPayload(cv, result)) return result;
  if (progress_.phase == UpdatePhase::kHandingOver) {
    if (handing_over_) return result;  // this process started the hand-over: it is on its way out
    const HandingOverPhase* handing_over = progress_.handing_over();
    const bool successor = !options_.hand_over || (handing_over && !handing_over->id.empty() &&
                                                   handing_over->id == options_.hand_over_id);
    if (!successor && progress_.applying.hand_over_attempts < kMaxHandOverAttempts) {
      // Not the agent this hand-over started: the old one died before its successor ran
      // (kill -9), or this is a restart in place (a container's PID 1 again). The
      // agent's own manifests are applied already: hand over again.
      spdlog::warn("the state says a hand-over to a new agent was under way; handing over again");
      if (!PayloadStillWhole(result)) return result;
      auto loaded = Payload(progress_.payload.dir);
      if (loaded.ok() && progress_.applying.next_group < static_cast<int64_t>((*loaded)->plan.size())) {
        HandOver(**loaded, (*loaded)->plan[static_cast<size_t>(progress_.applying.next_group)], result);
        return result;
      }
    }
    // The new agent (or, after repeated hand-overs that never reached one, this one):
    // the old one applied its own manifests before handing over.
    ++progress_.applying.next_group;
    progress_.applying.group_started = Now();
    if (!MoveUpdatePhase(progress_, UpdatePhase::kApplying, result.status)) return result;
    progress_.applying.hand_over_attempts = 0;
    if (!Commit(result)) return result;
  }
  EnsureStarted(cv);
  if (ApplyGroups(result) && Complete(cv, result)) result.updating = false;
  return result;
}

void UpdateRunner::Fail(const std::string& reason, const std::string& message, UpdateStepResult& result) {
  result.status.release = UpdateStatus::Acceptance{false, reason, message};
  result.status.progress = UpdateStatus::Progress::kNotAccepted;
  result.status.target = progress_.version.empty() ? progress_.image : progress_.version;
  if (!progress_.payload.dir.empty() && progress_.payload.dir != progress_.payload.running_dir) {
    // A refused payload is not kept.
    env::RemoveLeftover(options_.files ? *options_.files : env::DefaultFileSystem(), progress_.payload.dir, "a refused payload");
  }
  const FailedPhase failed{reason, message, UnixSeconds(clock_.Now()) + options_.retry_after.count()};
  if (!MoveUpdatePhase(progress_, UpdatePhase::kFailed, result.status, failed)) return;
  progress_.payload.dir.clear();
  EndAttempt("Failed", "", reason);
  loaded_.reset();
  // A failure kept only in memory is harmless (a restart tries the target again), but
  // the disk's state is said.
  if (Status saved = Save(); !saved.ok()) {
    result.status.failure =
        UpdateStatus::Failure{"AgentStateNotSaved", fmt::format("The agent cannot save its progress: {}", saved.message())};
  }
}

Result<VerificationConfig> UpdateRunner::VerificationSource(const ClusterVersion& cv, UpdateStepResult& result) {
  // The running release's own payload says whom to trust: pulled once, kept, and checked
  // against the record of its download before each use.
  const std::string& running_image = cv.status.desired.image;
  const bool pull = !running_image.empty() && options_.pull_running_payload;
  std::string pull_error;
  Status whole = progress_.payload.running_dir.empty() ? Status::NotFound("not pulled yet")
                                                       : VerifyPayloadOnDisk(progress_.payload.running_dir);
  if (!whole.ok() && pull) {
    auto dir = Pull(running_image);  // replaces a payload that is not whole only once the new one is
    if (dir.ok()) {
      progress_.payload.running_dir = *dir;
      if (!Commit(result)) return Status::IoError("the update's progress cannot be saved");
      whole = Status::OK();
    } else if (dir.status().code() == Status::Code::kNoSpace) {
      return dir.status().WithContext("the running release's payload");
    } else {
      pull_error = dir.status().message();
    }
  }
  if (!whole.ok() && !progress_.payload.running_dir.empty()) {
    if (whole.code() == Status::Code::kNotFound) {
      // An older agent's download, without a record, and no fresh copy to be had (the
      // registry may have dropped the running release): used as it is.
      spdlog::warn("the running release's payload at {} cannot be checked ({}), nor pulled again ({}): used as it is",
                   progress_.payload.running_dir, whole.message(), pull_error);
    } else {
      spdlog::warn("the running release's payload at {} is not what was downloaded ({}) and cannot be pulled again ({})",
                   progress_.payload.running_dir, whole.message(), pull_error);
      progress_.payload.running_dir.clear();
      if (!Commit(result)) return Status::IoError("the update's progress cannot be saved");
    }
  }
  if (!progress_.payload.running_dir.empty()) {
    ManifestContext context;
    CINCINNATI_ASSIGN_OR_RETURN(std::vector<Manifest> manifests, LoadManifests(progress_.payload.running_dir, context));
    for (const auto& m : manifests) {
      if (IsVerificationConfigMap(m.object)) return ReadVerificationConfigMap(m.object);
    }
  }
  if (!options_.verification_keys_dir.empty()) {
    return VerificationFromFiles(options_.verification_keys_dir, options_.verification_stores);
  }
  return Status::InvalidArgument(fmt::format(
      "the running release has no verification ConfigMap{} and no --verification.keys was given: nothing can be verified",
      pull_error.empty() ? "" : " (its payload could not be read: " + pull_error + ")"));
}

bool UpdateRunner::Verify(const ClusterVersion& cv, UpdateStepResult& result) {
  Status verified = Status::OK();
  if (!verifier_ || verifier_source_ != progress_.payload.running_dir) {
    auto config = VerificationSource(cv, result);
    if (result.busy) return false;  // the progress could not be saved: said already
    if (config.ok()) {
      verifier_ = std::make_unique<ReleaseVerifier>(std::move(config).value(), options_.signature_ca_dir, clock_);
      verifier_source_ = progress_.payload.running_dir;
    } else if (config.status().code() == Status::Code::kNoSpace) {
      Fail("RetrievePayload",
           fmt::format("Retrieving payload failed version=\"{}\" image=\"{}\" failure={}", progress_.version,
                       progress_.image, config.status().message()),
           result);
      return false;
    } else {
      verifier_.reset();
      verified = config.status();
    }
  }
  if (verifier_) {
    std::optional<std::vector<std::string>> stores;
    if (!cv.spec.signature_stores.empty()) {
      stores.emplace();
      for (const auto& s : cv.spec.signature_stores) stores->push_back(s.url);
    }
    auto got = verifier_->Verify(progress_.image, stores, clock_.Steady() + options_.verify_budget, stop_);
    if (!got.ok()) verified = got.status();
  }
  if (stop_.stop_requested()) return false;  // shutting down: a search cut short proves nothing
  progress_.payload.verified = verified.ok();
  if (!verified.ok()) {
    const std::string why = "The update cannot be verified: " + verified.message();
    if (!progress_.force) {
      Fail("ImageVerificationFailed",
           fmt::format("Retrieving payload failed version=\"{}\" image=\"{}\" failure={}", progress_.version,
                       progress_.image, why),
           result);
      return false;
    }
    AddRisk(progress_.payload.accepted_risks, why);
  }
  return MoveUpdatePhase(progress_, UpdatePhase::kDownloading, result.status) && Commit(result);
}

bool UpdateRunner::Download(UpdateStepResult& result) {
  auto dir = Pull(progress_.image);
  if (!dir.ok()) {
    if (stop_.stop_requested()) return false;  // cut short by the shutdown: not a failure
    Fail("RetrievePayload",
         fmt::format("Retrieving payload failed version=\"{}\" image=\"{}\" failure={}", progress_.version,
                     progress_.image, dir.status().message()),
         result);
    return false;
  }
  progress_.payload.dir = *dir;
  whole_dir_ = *dir;  // read back and checked by the download
  return MoveUpdatePhase(progress_, UpdatePhase::kLoading, result.status) && Commit(result);
}

Result<std::string> UpdateRunner::Pull(const std::string& image) {
  CINCINNATI_ASSIGN_OR_RETURN(registry::ImageReference ref, registry::ParseImageReference(image));
  const auto& insecure = options_.insecure_registries;
  if (!ref.location.insecure && std::find(insecure.begin(), insecure.end(), ref.location.host_port) != insecure.end()) {
    ref.location.base_url = "http://" + ref.location.host_port;
    ref.location.insecure = true;
  }
  registry::RegistryClient client(ref.location, {options_.registry_username, options_.registry_password},
                                  {.ca_path = options_.registry_ca_dir, .stop = stop_});
  Result<std::string> dir = DownloadPayload(client, image, options_.payload_root, stop_,
                                            options_.files ? *options_.files : env::DefaultFileSystem());
  // A download that fails for the network says nothing of the disk; one that fails for
  // the disk, or succeeds, does.
  const bool disk = dir.ok() || dir.status().code() == Status::Code::kNoSpace;
  if (storage_ && disk && storage_->Record(StorageArea::kPayloads, dir.status())) {
    if (dir.ok()) {
      spdlog::info("payloads are written again");
    } else {
      spdlog::error("cannot download {}: {}", image, dir.status().message());
    }
  }
  return dir;
}

Result<const UpdateRunner::Loaded*> UpdateRunner::Payload(const std::string& dir) {
  if (loaded_ && loaded_->dir == dir) return loaded_.get();
  auto loaded = std::make_unique<Loaded>();
  loaded->dir = dir;
  CINCINNATI_ASSIGN_OR_RETURN(loaded->info, ReadPayload(dir));
  ManifestContext context;
  context.release_image = progress_.image;
  context.images = loaded->info.images;
  context.exclude_id = options_.exclude_id;
  context.major_version = loaded->info.metadata.version.major();
  CINCINNATI_ASSIGN_OR_RETURN(loaded->manifests, LoadManifests(dir, context));
  for (const auto& m : loaded->manifests) loaded->included.push_back(!ExclusionReason(m, context).has_value());
  loaded->plan = PlanUpdate(loaded->manifests, loaded->included);
  loaded_ = std::move(loaded);
  return loaded_.get();
}

bool UpdateRunner::PayloadStillWhole(UpdateStepResult& result) {
  if (!whole_dir_.empty() && progress_.payload.dir == whole_dir_) return true;  // downloaded or checked here
  Status whole = VerifyPayloadOnDisk(progress_.payload.dir);
  if (whole.ok()) {
    whole_dir_ = progress_.payload.dir;
    return true;
  }
  // Changed on disk since it was downloaded: never applied, and not the release's fault.
  // The download fetches it again (and replaces this one once the new one is whole).
  spdlog::warn("the payload of {} at {} is not what was downloaded ({}): downloading it again", progress_.image,
               progress_.payload.dir, whole.message());
  if (MoveUpdatePhase(progress_, UpdatePhase::kDownloading, result.status) && Commit(result)) {
    result.busy = true;  // download again at the next step
  }
  return false;
}

bool UpdateRunner::LoadPayload(const ClusterVersion& cv, UpdateStepResult& result) {
  if (!PayloadStillWhole(result)) return false;
  auto loaded = Payload(progress_.payload.dir);
  if (!loaded.ok()) {
    Fail("UpdatePayloadIntegrity",
         fmt::format("The update cannot be applied: the payload of version=\"{}\" image=\"{}\" is invalid: {}",
                     progress_.version, progress_.image, loaded.status().message()),
         result);
    return false;
  }
  const std::string payload_version = (*loaded)->info.metadata.version.ToString();
  if (!progress_.version.empty() && progress_.version != payload_version) {
    Fail("VerifyPayloadVersion",
         fmt::format("release image version {} does not match the expected upstream version {}", payload_version,
                     progress_.version),
         result);
    return false;
  }
  progress_.version = payload_version;
  auto summary = Summarize(RunPreconditions(cv, payload_version, (*loaded)->info.metadata.previous), progress_.force);
  if (summary && summary->blocked) {
    Fail(summary->reason,
         fmt::format("Preconditions failed for payload loaded version=\"{}\" image=\"{}\": {}", payload_version,
                     progress_.image, summary->message),
         result);
    return false;
  }
  if (summary) AddRisk(progress_.payload.accepted_risks, summary->message);
  const auto& metadata = (*loaded)->info.metadata.metadata;
  auto arch = metadata.find(std::string(kReleaseArchitectureKey));
  result.status.release = UpdateStatus::Acceptance{
      true, "PayloadLoaded",
      fmt::format("Payload loaded version=\"{}\" image=\"{}\" architecture=\"{}\"", payload_version, progress_.image,
                  arch != metadata.end() ? arch->second : "amd64")};
  if (!MoveUpdatePhase(progress_, UpdatePhase::kApplying, result.status)) return false;
  progress_.applying.next_group = 0;
  progress_.applying.group_started = Now();
  return Commit(result);
}

}  // namespace cincinnati::agent
