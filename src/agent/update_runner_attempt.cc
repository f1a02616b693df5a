// UpdateRunner, attempts: where one update attempt begins and ends, for its report
// (update_runner.h has the contract; update_progress.h the fields).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <random>

#include "agent/update_runner.h"
#include "graph-data/time_format.h"

namespace cincinnati::agent {
namespace {

// A refusal repeats every --update-retry (60 s): one report a day says it as well.
constexpr int64_t kRefusalReportPeriod = 24 * 3600;

// 128 random bits in lower-case hex: (cluster id, attempt id) is what the service
// de-duplicates on, so it must not repeat across restarts or clusters.
std::string NewAttemptId() {
  std::random_device rd;
  std::string out;
  for (int i = 0; i < 4; ++i) out += fmt::format("{:08x}", rd());
  return out;
}

int64_t UnixNow(const env::Clock& clock) {
  return std::chrono::duration_cast<std::chrono::seconds>(clock.Now().time_since_epoch()).count();
}

std::string RefusalKey(const UpdateProgress& p) { return p.image + " " + p.result_reason; }

}  // namespace

void UpdateRunner::BeginAttempt(UpdateProgress& p, const ClusterVersion& cv) const {
  const bool multi = cv.status.desired.multi_architecture ||
                     (cv.spec.desired_update && cv.spec.desired_update->architecture == "Multi");
  p.attempt_id = NewAttemptId();
  p.from_version = cv.status.desired.version;
  p.from_image = cv.status.desired.image;
  p.attempt_channel = cv.spec.channel;
  p.attempt_arch = multi ? "multi" : options_.arch;
  p.degraded_since.clear();
  p.ended.clear();
  p.result.clear();
  p.result_component.clear();
  p.result_reason.clear();
  p.reported = false;
}

void UpdateRunner::EndAttempt(const char* result, const std::string& component, const std::string& reason) {
  // The first end counts: a recovery after a failure is the same attempt, reported once.
  if (progress_.attempt_id.empty() || !progress_.result.empty()) return;
  progress_.result = result;
  progress_.result_component = component;
  progress_.result_reason = reason;
  progress_.ended = Now();
  spdlog::info("update: the attempt {} ({} -> {}) ended {}{}{}", progress_.attempt_id, progress_.from_version,
               progress_.version.empty() ? progress_.image : progress_.version, result,
               reason.empty() ? "" : ": " + reason, component.empty() ? "" : " (" + component + ")");
  if (progress_.result == "Failed" && component.empty() && RefusalKey(progress_) == progress_.refusal_reported &&
      UnixNow(clock_) - progress_.refusal_reported_at < kRefusalReportPeriod) {
    progress_.reported = true;  // refused again for the same reason: reported today already
  }
}

void UpdateRunner::WatchAttempt(const std::vector<std::string>& degraded, const std::vector<std::string>& waiting,
                                bool late, UpdateStepResult& result) {
  // The start of a Degraded spell is saved, so that a restart does not restart the grace.
  const std::string since = degraded.empty() ? "" : progress_.degraded_since.empty() ? Now() : progress_.degraded_since;
  bool changed = since != progress_.degraded_since;
  progress_.degraded_since = since;
  if (!progress_.attempt_id.empty() && progress_.result.empty()) {
    auto start = graphdata::ParseDateTime(since);
    if (!degraded.empty() && start.ok() && UnixNow(clock_) - *start >= options_.degraded_grace.count()) {
      EndAttempt("Failed", degraded.front(), "ClusterOperatorDegraded");
      changed = true;
    } else if (degraded.empty() && late && !waiting.empty()) {
      EndAttempt("Failed", waiting.front(), "ClusterOperatorNotAvailable");
      changed = true;
    }
  }
  if (changed) Commit(result);  // not saved: seen again at the next step
}

std::optional<UpdateProgress> UpdateRunner::UnreportedEnd() const {
  if (progress_.attempt_id.empty() || progress_.result.empty() || progress_.reported) return std::nullopt;
  return progress_;
}

Status UpdateRunner::MarkReported() {
  progress_.reported = true;
  if (progress_.result == "Failed" && progress_.result_component.empty()) {
    progress_.refusal_reported = RefusalKey(progress_);
    progress_.refusal_reported_at = UnixNow(clock_);
  }
  return Save();
}

}  // namespace cincinnati::agent
