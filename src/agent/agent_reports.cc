// The agent's update reports (agent.h says when they are queued and sent):
// the update loop queues the Started report of an attempt under way and the report of
// an attempt that has ended, the retrieval loop sends what is due.
#include <spdlog/spdlog.h>

#include "agent/agent.h"

namespace cincinnati::agent {
namespace {

// The Started report of the attempt under way, queued once per process (a restarted
// agent queues it again: the service takes an attempt's start once). Returns whether
// one was queued.
bool QueueStart(const UpdateProgress& progress, const std::string& cluster_id, ReportOutbox& outbox, env::Clock& clock) {
  const UpdateAttempt& a = progress.attempt;
  // Announced once it applies: a release refused while verified, downloaded or loaded
  // changed nothing (and is retried as a new attempt, reported once a day).
  const bool applying = progress.phase == UpdatePhase::kApplying || progress.phase == UpdatePhase::kHandingOver;
  if (!applying || a.id.empty() || !a.result.empty() || a.reported || outbox.StartQueued(a.id)) return false;
  auto report = ReportOfStart(progress, cluster_id, env::UnixSeconds(clock));
  if (!report.ok()) {
    spdlog::debug("the attempt {} makes no valid Started report ({}): none is sent", a.id, report.status().message());
    return false;
  }
  if (Status s = outbox.Enqueue(*report, a.poll_receipt); !s.ok()) {
    spdlog::debug("the Started report of attempt {} is not queued yet: {}", a.id, s.message());
    return false;  // the next pass tries again
  }
  return true;
}

}  // namespace

// The report of an attempt that has ended, queued once (runner_: the update loop only).
// Returns whether one was queued.
bool Agent::QueueReport(const std::string& cluster_id) {
  std::optional<UpdateProgress> ended = runner_->UnreportedEnd();
  if (!ended) return outbox_ && QueueStart(runner_->progress(), cluster_id, *outbox_, clock_);
  bool queued = false;
  if (outbox_) {
    auto report = ReportOfAttempt(*ended, cluster_id);
    if (!report.ok()) {
      spdlog::warn("the attempt {} makes no valid update report ({}): none is sent", ended->attempt.id,
                   report.status().message());
      outbox_->CountDropped("invalid");
    } else if (Status s = outbox_->Enqueue(*report, ended->attempt.poll_receipt); !s.ok()) {
      spdlog::debug("the report of attempt {} is not queued yet: {}", ended->attempt.id, s.message());
      return false;  // the next pass tries again; the update goes on meanwhile
    } else {
      queued = true;
    }
  }
  // Marked only once queued: a kill -9 before this queues the same report again.
  if (Status s = runner_->MarkReported(); !s.ok()) {
    spdlog::debug("the report of attempt {} is queued, and marked so in memory only: {}", ended->attempt.id,
                  s.message());
  }
  return queued;
}

void Agent::SendReports() {
  if (!outbox_) return;
  outbox_->SendDue();  // network, no lock
  const auto due = outbox_->NextDue();
  std::lock_guard lock(mu_);
  retrieval_loop_.next = std::min(retrieval_loop_.next, due);
}

}  // namespace cincinnati::agent
