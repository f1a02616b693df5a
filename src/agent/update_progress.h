// UpdateProgress: where an update stands (from verifying a release to applying it), persisted in the
// object store after every phase change so that a restart (a kill -9, or the agent's
// own hand-over to the new release) resumes at the same phase.
//
//   Idle -> Verifying -> Downloading -> Loading -> Applying -> Completed
//                 \            \           \-> Failed (retried after a while, or on a new target)
//   Applying -> HandingOver -> Applying   (the agent's own manifests first, then re-exec)
// The whole table of moves, checked at every change, is in update_phases.h. What only
// one phase has (why it failed, the hand-over's id) lives with that phase, in
// `phase_data`, set with the phase by MoveUpdatePhase; the stored document keeps its
// flat fields (empty in the other phases). The rest is grouped by what it says (the
// payload, the applying, the attempt), in memory only: the stored document is flat, with
// the field names of older agents. Plain value with JSON conversion; FromJson is
// total (a bad document is an error), and a document of an older agent, without the
// attempt's fields, reads with their defaults.
//
// An attempt (one update report each) begins when an update starts, and again
// at each retry of a refused release; it ends once, Completed or Failed (result), and
// what happens after (a recovery) changes nothing of it. `attempt.reported` says that its report
// was queued (or that none is due), so a restart neither loses nor repeats it. Its
// `poll_receipt` (poll_receipt_book.h) goes with its report (optional: older documents
// have none).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/status.h"
#include "kube/json_value.h"

namespace cincinnati::agent {

using kube::JsonValue;

enum class UpdatePhase { kIdle, kVerifying, kDownloading, kLoading, kApplying, kHandingOver, kCompleted, kFailed };
std::string_view UpdatePhaseName(UpdatePhase phase);

// kFailed: the release was refused, and is tried again after `retry_at`.
struct FailedPhase {
  std::string reason, message;
  int64_t retry_at = 0;  // Unix seconds after which the target is tried again
};
// kHandingOver: the id given to the new agent (it alone continues from here; any other
// process hands over again).
struct HandingOverPhase {
  std::string id;
};
using UpdatePhaseData = std::variant<std::monostate, FailedPhase, HandingOverPhase>;

// The release put in place: what its verification let through, and where its payload
// and the running release's are on disk.
struct UpdatePayload {
  bool verified = false;
  std::string accepted_risks;  // what force or warnings let through, one per line
  std::string dir;             // the target's, once downloaded
  std::string running_dir;     // the running release's (its verification ConfigMap)
};

// How far applying the plan has come.
struct ApplyProgress {
  int64_t next_group = 0;      // the first group of the plan not known to be done
  std::string group_started;   // RFC 3339: when next_group started (component timeouts)
  int64_t hand_over_attempts = 0;  // how many hand-overs the group at next_group has started
};

// One attempt, one update report ("" id: none, as in an older agent's document).
struct UpdateAttempt {
  std::string id;                          // 32 random lower-case hex digits
  std::string from_version, from_image;    // status.desired when it began
  std::string channel, arch;
  std::string degraded_since;              // RFC 3339: since when a component is Degraded ("": none is)
  std::string ended;                       // RFC 3339, once the attempt has ended
  std::string result;                      // "", "Completed" or "Failed"
  std::string result_component, result_reason;
  bool reported = false;
  std::string poll_receipt;  // the receipt of the agent's polls at from_version when it began ("": none)
};

// The last refusal reported (image and reason) and when (Unix seconds): a release
// refused again for the same reason is reported at most once a day. It outlives the
// attempts, one per retry.
struct ReportedRefusal {
  std::string key;
  int64_t at = 0;
};

struct UpdateProgress {
  UpdatePhase phase = UpdatePhase::kIdle;
  UpdatePhaseData phase_data;  // FailedPhase while kFailed, HandingOverPhase while kHandingOver, else none
  const FailedPhase* failed() const { return std::get_if<FailedPhase>(&phase_data); }
  const HandingOverPhase* handing_over() const { return std::get_if<HandingOverPhase>(&phase_data); }

  std::string image;    // the target pull spec
  std::string version;  // as requested (may be empty until the payload says)
  bool force = false;
  std::string started;  // RFC 3339: when the update started
  UpdatePayload payload;
  ApplyProgress applying;
  UpdateAttempt attempt;
  ReportedRefusal last_refusal;
};

// What the update runner says of the update after a step, as the CVO's sync worker
// reports a SyncWorkerStatus (openshift/cluster-version-operator pkg/cvo/sync_worker.go);
// the agent words it as the ClusterVersion's conditions (agent.cc), as the CVO's
// pkg/cvo/status.go does. What a step did not say leaves its condition as it was.
struct UpdateStatus {
  // Progressing: what the update is doing.
  enum class Progress { kUnsaid, kDownloading, kApplying, kHandingOver, kNotAccepted, kCompleted };
  Progress progress = Progress::kUnsaid;
  std::string target;  // the version worked towards (its image while the version is unknown)
  int64_t done = 0, total = 0;          // kApplying: the plan's groups
  std::vector<std::string> waiting_on;  // kApplying: the components, the degraded first
  // ReleaseAccepted: whether the payload was accepted, as the CVO's LoadPayloadStatus;
  // kNotAccepted's reason is this one's.
  struct Acceptance {
    bool accepted = false;
    std::string reason, message;
  };
  std::optional<Acceptance> release;
  // Failing: why the update does not go on (nullopt: it is not failing).
  struct Failure {
    std::string reason, message;
  };
  std::optional<Failure> failure;
};

JsonValue ToJson(const UpdateProgress& progress);
Result<UpdateProgress> UpdateProgressFromJson(const JsonValue& json);

}  // namespace cincinnati::agent
