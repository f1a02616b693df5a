// The agent's update reports (agent.h says when they are queued and sent):
// the update loop queues the report of an attempt that has ended, the retrieval loop
// sends what is due.
#include <spdlog/spdlog.h>

#include "agent/agent.h"

namespace cincinnati::agent {

// The report of an attempt that has ended, queued once (runner_: the update loop only).
// Returns whether one was queued.
bool Agent::QueueReport(const std::string& cluster_id) {
  std::optional<UpdateProgress> ended = runner_->UnreportedEnd();
  if (!ended) return false;
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
