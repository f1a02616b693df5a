// UpdateProgress: where an update stands (from verifying a release to applying it), persisted in the
// object store after every phase change so that a restart (a kill -9, or the agent's
// own hand-over to the new release) resumes at the same phase.
//
//   Idle -> Verifying -> Downloading -> Loading -> Applying -> Completed
//                 \            \           \-> Failed (retried after a while, or on a new target)
//   Applying -> HandingOver -> Applying   (the agent's own manifests first, then re-exec)
// The whole table of moves, checked at every change, is in update_phases.h. Plain value
// with JSON conversion; FromJson is total (a bad document is an error), and a document
// of an older agent, without the attempt's fields, reads with their defaults.
//
// An attempt (one update report each) begins when an update starts, and again
// at each retry of a refused release; it ends once, Completed or Failed (result), and
// what happens after (a recovery) changes nothing of it. `reported` says that its report
// was queued (or that none is due), so a restart neither loses nor repeats it.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "kube/json_value.h"

namespace cincinnati::agent {

using kube::JsonValue;

enum class UpdatePhase { kIdle, kVerifying, kDownloading, kLoading, kApplying, kHandingOver, kCompleted, kFailed };
std::string_view UpdatePhaseName(UpdatePhase phase);

struct UpdateProgress {
  UpdatePhase phase = UpdatePhase::kIdle;
  std::string image;    // the target pull spec
  std::string version;  // as requested (may be empty until the payload says)
  bool force = false;
  bool verified = false;
  std::string accepted_risks;  // what force or warnings let through, one per line
  std::string payload_dir;     // the target's, once downloaded
  std::string running_payload_dir;  // the running release's (its verification ConfigMap)
  int64_t next_group = 0;      // the first group of the plan not known to be done
  std::string group_started;   // RFC 3339: when next_group started (component timeouts)
  std::string started;         // RFC 3339: when the update started
  std::string failed_reason, failed_message;  // kFailed
  int64_t retry_at = 0;        // kFailed: Unix seconds after which the target is tried again
  // kHandingOver: the id given to the new agent (it alone continues from here; any other
  // process hands over again), and how many hand-overs this group has started.
  std::string hand_over_id;
  int64_t hand_over_attempts = 0;

  // The attempt ("" attempt_id: none, as in an older agent's document).
  std::string attempt_id;                  // 32 random lower-case hex digits
  std::string from_version, from_image;    // status.desired when it began
  std::string attempt_channel, attempt_arch;
  std::string degraded_since;              // RFC 3339: since when a component is Degraded ("": none is)
  std::string ended;                       // RFC 3339, once the attempt has ended
  std::string result;                      // "", "Completed" or "Failed"
  std::string result_component, result_reason;
  bool reported = false;
  // The last refusal reported (image and reason) and when (Unix seconds): a release
  // refused again for the same reason is reported at most once a day.
  std::string refusal_reported;
  int64_t refusal_reported_at = 0;
};

JsonValue ToJson(const UpdateProgress& progress);
Result<UpdateProgress> UpdateProgressFromJson(const JsonValue& json);

}  // namespace cincinnati::agent
