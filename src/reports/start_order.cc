#include "reports/start_order.h"

#include <algorithm>

namespace cincinnati::reports {

void StartOrderSettler::Start(uint64_t key, int64_t started, bool known_bad_site, int64_t now) {
  Advance(now);
  if (known_bad_site) return;  // counted at its report, in `excluded`
  if (started + options_.horizon_secs <= now_) return;  // its report will be late
  open_.try_emplace({started, key});
}

void StartOrderSettler::Resolve(uint64_t key, int64_t started, bool failed, bool known_bad_site, int64_t now) {
  Advance(now);
  if (known_bad_site) {
    ++final_.excluded;
    final_.excluded_failures += failed;
    return;
  }
  const auto it = open_.find({started, key});
  if (it != open_.end()) {
    if (it->second.resolved) return;  // a resend
    it->second = Entry{true, failed};
    open_failures_ += failed;
    return;
  }
  // Past the horizon already: announced ones were counted as stuck; in reports-only mode
  // this is its first news.
  if (started + options_.horizon_secs <= now_) {
    ++late_;
    if (options_.starts_announced) return;
    ++final_.clusters;
    final_.failures += failed;
    return;
  }
  open_.emplace(std::pair{started, key}, Entry{true, failed});
  open_failures_ += failed;
}

void StartOrderSettler::Finalize(const Entry& e) {
  ++final_.clusters;
  final_.failures += e.resolved ? e.failed : true;  // unresolved past the horizon: stuck
}

// Attempts whose start is `horizon` or more in the past are final, in start order
// (kept until then, also resolved ones, so that a resend within the horizon is known).
void StartOrderSettler::Advance(int64_t now) {
  now_ = std::max(now_, now);
  while (!open_.empty()) {
    const auto head = open_.begin();
    if (head->first.first + options_.horizon_secs > now_) break;
    if (head->second.resolved) open_failures_ -= head->second.failed;
    Finalize(head->second);
    open_.erase(head);
  }
}

SequentialCounts StartOrderSettler::Settle(int64_t now) {
  Advance(now);
  SequentialCounts out = final_;
  if (options_.starts_announced) {
    out.clusters += static_cast<int64_t>(open_.size());  // unresolved count as successes for now
    out.failures += open_failures_;
  }
  return out;
}

}  // namespace cincinnati::reports
