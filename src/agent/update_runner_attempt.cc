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

std::string RefusalKey(const UpdateProgress& p) { return p.image + " " + p.attempt.result_reason; }

}  // namespace

void UpdateRunner::BeginAttempt(UpdateProgress& p, const ClusterVersion& cv) const {
  const bool multi = cv.status.desired.multi_architecture ||
                     (cv.spec.desired_update && cv.spec.desired_update->architecture == "Multi");
  p.attempt = UpdateAttempt{};  // nothing of the one before: not ended, not reported
  p.attempt.id = NewAttemptId();
  p.attempt.from_version = cv.status.desired.version;
  p.attempt.from_image = cv.status.desired.image;
  p.attempt.channel = cv.spec.channel;
  p.attempt.arch = multi ? "multi" : options_.arch;
  // The proof of polling at `from`, for the report this attempt ends with (sent after
  // the hand-over, maybe by a restarted agent: it is saved with the attempt).
  if (options_.poll_receipts) p.attempt.poll_receipt = options_.poll_receipts->For(p.attempt.from_version);
}

void UpdateRunner::EndAttempt(const char* result, const std::string& component, const std::string& reason) {
  // The first end counts: a recovery after a failure is the same attempt, reported once.
  if (progress_.attempt.id.empty() || !progress_.attempt.result.empty()) return;
  progress_.attempt.result = result;
  progress_.attempt.result_component = component;
  progress_.attempt.result_reason = reason;
  progress_.attempt.ended = Now();
  spdlog::info("update: the attempt {} ({} -> {}) ended {}{}{}", progress_.attempt.id, progress_.attempt.from_version,
               progress_.version.empty() ? progress_.image : progress_.version, result,
               reason.empty() ? "" : ": " + reason, component.empty() ? "" : " (" + component + ")");
  if (progress_.attempt.result == "Failed" && component.empty() &&
      RefusalKey(progress_) == progress_.last_refusal.key &&
      UnixNow(clock_) - progress_.last_refusal.at < kRefusalReportPeriod) {
    progress_.attempt.reported = true;  // refused again for the same reason: reported today already
  }
}

void UpdateRunner::WatchAttempt(const std::vector<std::string>& degraded, const std::vector<std::string>& waiting,
                                bool late, UpdateStepResult& result) {
  // The start of a Degraded spell is saved, so that a restart does not restart the grace.
  std::string& degraded_since = progress_.attempt.degraded_since;
  const std::string since = degraded.empty() ? "" : degraded_since.empty() ? Now() : degraded_since;
  bool changed = since != degraded_since;
  degraded_since = since;
  if (!progress_.attempt.id.empty() && progress_.attempt.result.empty()) {
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
  const UpdateAttempt& a = progress_.attempt;
  if (a.id.empty() || a.result.empty() || a.reported) return std::nullopt;
  return progress_;
}

Status UpdateRunner::MarkReported() {
  progress_.attempt.reported = true;
  if (progress_.attempt.result == "Failed" && progress_.attempt.result_component.empty()) {
    progress_.last_refusal.key = RefusalKey(progress_);
    progress_.last_refusal.at = UnixNow(clock_);
  }
  return Save();
}

}  // namespace cincinnati::agent
