#include "reports/start_order.h"

#include <algorithm>

namespace cincinnati::reports {

StartOrderSettler::StartOrderSettler(StartOrderOptions options) : options_(std::move(options)) {
  if (!options_.starts_announced) return;
  for (int64_t lag : options_.lags_secs) {
    cuts_.push_back(Cut{.lag = std::clamp<int64_t>(lag, 0, options_.horizon_secs), .next = open_.end()});
  }
}

void StartOrderSettler::Start(uint64_t key, int64_t started, bool known_bad_site, int64_t now) {
  Advance(now);
  if (known_bad_site) return;  // counted at its report, in `excluded`
  if (started + options_.horizon_secs <= now_) return;  // its report will be late
  if (!open_.contains({started, key})) Insert(key, started, Entry{});
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
    for (Cut& cut : cuts_) cut.failures += failed && started + cut.lag <= now_;
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
  Insert(key, started, Entry{true, failed});
}

void StartOrderSettler::Insert(uint64_t key, int64_t started, Entry entry) {
  const auto it = open_.emplace(std::pair{started, key}, entry).first;
  for (Cut& cut : cuts_) {
    if (started + cut.lag <= now_) {  // inside the prefix already
      ++cut.clusters;
      cut.failures += entry.resolved && entry.failed;
    } else if (cut.next == open_.end() || it->first < cut.next->first) {
      cut.next = it;
    }
  }
}

void StartOrderSettler::Finalize(const Entry& e) {
  ++final_.clusters;
  final_.failures += e.resolved ? e.failed : true;  // unresolved past the horizon: stuck
}

// Each cut takes in the attempts its boundary has passed; then attempts whose start is
// `horizon` or more in the past are final, in start order (kept until then, resolved or
// not, so that a resend within the horizon is known). Every cut holds them (lag <=
// horizon), so each gives them up to the final counts.
void StartOrderSettler::Advance(int64_t now) {
  now_ = std::max(now_, now);
  for (Cut& cut : cuts_) {
    for (; cut.next != open_.end() && cut.next->first.first + cut.lag <= now_; ++cut.next) {
      ++cut.clusters;
      cut.failures += cut.next->second.resolved && cut.next->second.failed;
    }
  }
  while (!open_.empty()) {
    const auto head = open_.begin();
    if (head->first.first + options_.horizon_secs > now_) break;
    for (Cut& cut : cuts_) {
      --cut.clusters;
      cut.failures -= head->second.resolved && head->second.failed;
    }
    Finalize(head->second);
    open_.erase(head);
  }
}

std::vector<SequentialCounts> StartOrderSettler::Settle(int64_t now) {
  Advance(now);
  if (cuts_.empty()) return {final_};
  std::vector<SequentialCounts> out(cuts_.size(), final_);
  for (size_t i = 0; i < cuts_.size(); ++i) {
    out[i].clusters += cuts_[i].clusters;  // unresolved ones count as successes for now
    out[i].failures += cuts_[i].failures;
  }
  return out;
}

}  // namespace cincinnati::reports
