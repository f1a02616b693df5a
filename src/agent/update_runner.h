// UpdateRunner: the second half of the CVO's update loop (as openshift/cincinnati's
// docs/design/openshift.md describes it) for a requested release: verify the signature, download
// the payload, check its layout, version and the preconditions, then apply its
// manifests group by group until every component reports the new version.
//
// Each Step() moves the persisted UpdateProgress (update_progress.h) as far as it can,
// keeps the ClusterVersion's history and status.desired, and returns what it did as an
// UpdateStatus (update_progress.h), which the agent words as these conditions:
//   - ReleaseAccepted: True "PayloadLoaded", or False naming the step that refused the
//     release (RetrievePayload with ImageVerificationFailed, VerifyPayloadVersion,
//     UpdatePayloadIntegrity, PreconditionChecks with UpgradePreconditionCheckFailed).
//     A refused payload is deleted, nothing of it is applied, and the same target is
//     tried again after `retry_after` (or at once when the target changes).
//   - history: a Partial entry (verified, acceptedRisks) once the payload is accepted,
//     Completed when every group is done; status.desired becomes the target then.
//   - Progressing and Failing while applying: "N of M done", the component waited on,
//     Failing=True naming a component that is Degraded or past `component_timeout`.
// `force` lets an unverified payload and blocking preconditions through, each recorded
// in acceptedRisks; it never overrides a version mismatch.
//
// Re-running any phase is harmless (downloads are reused, applying writes only what
// differs), so a kill -9 at any moment resumes where the progress says.
//
// Every step forward is persisted before it is acted on (Commit): when the progress
// cannot be saved (a full disk), the phase the store holds is put back, the status's
// failure (Failing=True, reason AgentStateNotSaved) names the cause, and the step is
// tried again a second later, so what runs never gets ahead of what a restart would
// resume from. A payload
// is checked against the record of its download before it is loaded; one that changed
// on disk is fetched again, never applied and never reported as a bad payload. A full
// disk while downloading is RetrievePayload naming the disk, retried after
// `retry_after`.
//
// Attempts (update_progress.h): Start, and each retry of a refused release,
// begin an attempt with a fresh random id, noting the running version, the channel, the
// arch and the poll receipt held for the running version (UpdateOptions::poll_receipts;
// its report carries it). It ends, once, at the first of: Completed; Fail (Failed, the refusal's
// reason, no component); a ClusterOperator not done after `component_timeout`
// (ClusterOperatorNotAvailable); one Degraded for `degraded_grace` on the clock
// (ClusterOperatorDegraded) - the component is the ClusterOperator's name. The end is
// saved with the phase it comes with. UnreportedEnd/MarkReported let the agent queue
// one report per attempt: marked only after the report is queued, so a kill -9 in
// between queues the same report (same id) again. A release refused again for the same
// reason is not reported again within a day (retries come every `retry_after`). An
// attempt abandoned before it ended (the request changed or went away) has no report.
//
// Thread-safety: one thread calls Step (the agent's loop thread), without the agent's
// lock; component objects are shared through ComponentObjects. Never throws.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "agent/cluster_version.h"
#include "agent/component_objects.h"
#include "agent/desired_update.h"
#include "agent/manifests.h"
#include "agent/object_store.h"
#include "agent/payload.h"
#include "agent/poll_receipt_book.h"
#include "agent/release_verifier.h"
#include "agent/storage_health.h"
#include "agent/update_progress.h"
#include "env/clock.h"
#include "env/file_system.h"

namespace cincinnati::agent {

struct UpdateOptions {
  std::string payload_root;                 // <state-dir>/updatepayloads
  std::string verification_keys_dir;        // bootstrap keys when the running release has no ConfigMap
  std::vector<std::string> verification_stores;
  std::string registry_username, registry_password, registry_ca_dir;
  // Registries (host:port) reached over plain HTTP when a pull spec names no scheme, as
  // registries.conf's `insecure = true` (pull specs in graphs never carry one).
  std::vector<std::string> insecure_registries;
  // Pull the running release's payload for its verification ConfigMap (the agent was
  // given a real --release-image; a --release-document demo has no payload to pull).
  bool pull_running_payload = false;
  std::string signature_ca_dir;
  std::string exclude_id;                   // exclude.release.openshift.io/<id>
  std::chrono::seconds verify_budget{120};
  std::chrono::seconds component_timeout{40 * 60};
  std::chrono::seconds retry_after{60};
  std::chrono::seconds degraded_grace{600};  // Degraded this long ends the attempt (reports)
  std::string arch = "amd64";                // what an attempt's report says (the graph request's)
  // Whether the embedding re-executes the agent after its own manifests (the agent
  // process does; tests that run the agent in-process do not).
  bool hand_over = false;
  // The hand-over id this process was started with ("": none): it is the new agent of
  // that hand-over (update_progress.h).
  std::string hand_over_id;
  env::FileSystem* files = nullptr;  // payload downloads; nullptr: the default
  // The receipts of the agent's polls (reports on); an attempt keeps its from-version's.
  const PollReceiptBook* poll_receipts = nullptr;
};

struct UpdateStepResult {
  UpdateStatus status;    // what the step says of the update: the agent's conditions
  bool updating = false;  // an update is under way (keep stepping)
  bool busy = false;      // step again soon (waiting on components)
  // The agent's own manifests are applied: hand over to this binary ("": the same
  // one), started with `hand_over_id`, which continues from the persisted progress.
  std::optional<std::string> hand_over_to;
  std::string hand_over_id;
};

class UpdateRunner {
 public:
  // `clock` (outliving the runner) dates the history and times retries; `stop` cancels network work in flight (verification, downloads) within about a
  // second; `storage` (optional) hears of every write's outcome.
  UpdateRunner(ObjectStore& store, ComponentObjects& components, UpdateOptions options, env::Clock& clock,
               std::stop_token stop = {}, StorageHealth* storage = nullptr);

  Status Load();  // reads the persisted progress
  // `cv`: a copy of the ClusterVersion whose history and status.desired the step
  // updates; `target`: the resolved desired update (nullopt: none, or the running
  // release).
  UpdateStepResult Step(ClusterVersion& cv, const std::optional<ResolvedTarget>& target, bool force);
  const UpdateProgress& progress() const { return progress_; }  // loop thread
  // The attempt that has ended and is not marked reported yet (loop thread).
  std::optional<UpdateProgress> UnreportedEnd() const;
  // Its report is queued, or none is due: saved, so that a restart does not queue it
  // again (when the save fails, the same report may be queued again: same id, harmless).
  Status MarkReported();

  // For other threads (API, metrics): the progress as last saved, and the manifests of
  // the payload being applied (cluster_version_payload).
  struct Snapshot {
    UpdateProgress progress;
    int64_t applied = 0, pending = 0;
  };
  Snapshot snapshot() const;

 private:
  struct Loaded {
    std::string dir;
    PayloadInfo info;
    std::vector<Manifest> manifests;
    std::vector<bool> included;
    std::vector<ApplyGroup> plan;
  };

  Status Save();
  bool Commit(UpdateStepResult& result);
  bool Start(const ClusterVersion& cv, const std::optional<ResolvedTarget>& target, bool force, UpdateStepResult& result);
  bool PayloadStillWhole(UpdateStepResult& result);
  void Fail(const std::string& reason, const std::string& message, UpdateStepResult& result);
  bool Verify(const ClusterVersion& cv, UpdateStepResult& result);
  bool Download(UpdateStepResult& result);
  bool LoadPayload(const ClusterVersion& cv, UpdateStepResult& result);
  Result<const Loaded*> Payload(const std::string& dir);
  bool ApplyGroups(UpdateStepResult& result);
  std::string HandOverBinary(const Loaded& loaded, const ApplyGroup& group) const;
  bool HandOver(const Loaded& loaded, const ApplyGroup& group, UpdateStepResult& result);
  bool Complete(ClusterVersion& cv, UpdateStepResult& result);
  void EnsureStarted(ClusterVersion& cv);
  void BeginAttempt(UpdateProgress& progress, const ClusterVersion& cv) const;
  void EndAttempt(const char* result, const std::string& component, const std::string& reason);
  void WatchAttempt(const std::vector<std::string>& degraded, const std::vector<std::string>& waiting, bool late,
                    UpdateStepResult& result);
  Result<VerificationConfig> VerificationSource(const ClusterVersion& cv, UpdateStepResult& result);
  Result<std::string> Pull(const std::string& image);
  std::string Now() const;

  ObjectStore& store_;
  ComponentObjects& components_;
  UpdateOptions options_;
  env::Clock& clock_;
  std::stop_token stop_;
  StorageHealth* storage_;
  UpdateProgress progress_;
  UpdateProgress saved_;  // what the store holds
  std::unique_ptr<Loaded> loaded_;
  bool handing_over_ = false;  // this process has started a hand-over (it exits soon)
  std::string whole_dir_;      // the payload directory this process downloaded or checked
  std::unique_ptr<ReleaseVerifier> verifier_;
  std::string verifier_source_;  // what verifier_ was built from
  mutable std::mutex snapshot_mu_;
  Snapshot snapshot_;
};

}  // namespace cincinnati::agent
