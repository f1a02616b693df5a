// StartOrderSettler: the attempts of one edge in the order they STARTED, for the
// sequential test (sequential_brake.h), so that the order reports arrive in cannot bias
// it.
//
// Why: an agent reports a failure after its component's degraded grace, a success only
// at completion, so failures arrive early; a rule fed in report order sees an inflated
// failure rate early in a rollout. In start order the outcomes of an edge are
// exchangeable: which cluster starts when does not depend on how its update will end.
//
// Two modes:
//  - Starts announced (`starts_announced`): every attempt is announced by Start before
//    its report. The test then judges several start-order prefixes: for each lag in
//    `lags_secs`, every attempt started at least that long ago, an unresolved one counted
//    as a success for now; it brakes when any prefix does. Valid because L_n grows with
//    failures (sequential_brake.h): a prefix that brakes with its unknowns as successes
//    brakes with its true outcomes too, so every brake is inside the event "the test on
//    the true start-order sequence crossed at some n", which Ville's inequality bounds by
//    alpha. Lag 0 sees failures at once; longer lags see prefixes whose successes have
//    had time to arrive, and so brake an edge whose failure share is diluted at lag 0 by
//    updates still running.
//  - Reports only (today's stores: an attempt is known from its report): an attempt is
//    counted once `horizon` has passed since its start, when every attempt started
//    before it has reported or never will; one prefix, braking `horizon` later than it
//    could.
// An attempt unresolved `horizon` after its start counts as a failure: a stuck update
// is a failed one for its cluster (the agent's component timeout ends an attempt
// stuck on one component; a cluster stuck longer is stuck), and counting it as
// anything else would let an edge that hangs clusters never be braked. In reports-only
// mode nothing is known of an attempt that never reports; it is not counted. A report
// that comes after its attempt was counted (stuck, or past the horizon) is `late`:
// a stuck one stays a failure, a late report of an uncounted attempt is counted as it
// comes (out of order, counted in `late` so the operator sees how many).
//
// Known-bad sites (the baseline): an attempt of a cluster whose previous update, on
// another edge, failed is not counted against this edge; its outcome goes to
// `excluded` and `excluded_failures`, the background the verdict's message states. Why
// this baseline: a store computes it from one bit per cluster (its last attempt
// failed), and it removes exactly the clusters that fail whatever they update to,
// without raising the threshold for everyone else.
//
// A resend (same key and start) is known as one within the horizon; later, the caller
// drops duplicates as the ledger does today (one count per cluster and edge).
// Times are Unix seconds; `now` never goes back (an older one is taken as the newest
// seen). Memory: one map entry per attempt started within the horizon. Not thread-safe; pure; never
// throws.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "reports/sequential_brake.h"

namespace cincinnati::reports {

struct StartOrderOptions {
  int64_t horizon_secs = 2 * 3600;  // longer than any update: unresolved this long is stuck
  bool starts_announced = false;
  // Starts announced: the prefixes judged, by how long ago they end (each at most the
  // horizon; longer ones are taken as the horizon).
  // Every 5 minutes up to 90, the longest update the benchmark draws: finer steps than
  // that gained under 1 % of exposure there.
  std::vector<int64_t> lags_secs = {0,    300,  600,  900,  1200, 1500, 1800, 2100, 2400, 2700,
                                    3000, 3300, 3600, 3900, 4200, 4500, 4800, 5100, 5400};
};

class StartOrderSettler {
 public:
  explicit StartOrderSettler(StartOrderOptions options);
  // It keeps iterators into its own map: neither copied nor moved (hold it by pointer).
  StartOrderSettler(const StartOrderSettler&) = delete;
  StartOrderSettler& operator=(const StartOrderSettler&) = delete;

  // An attempt (key unique per edge, e.g. its cluster) started at `started`.
  void Start(uint64_t key, int64_t started, bool known_bad_site, int64_t now);
  // Its report: how it ended.
  void Resolve(uint64_t key, int64_t started, bool failed, bool known_bad_site, int64_t now);
  // The prefixes the test may judge at `now`, one per lag (one with reports only); moves
  // attempts past the horizon to final.
  std::vector<SequentialCounts> Settle(int64_t now);
  int64_t late() const { return late_; }
  // Attempts started within the horizon (their counts still move as time passes).
  int64_t recent() const { return static_cast<int64_t>(open_.size()); }
  bool empty() const { return open_.empty() && final_.clusters == 0 && final_.excluded == 0 && late_ == 0; }

 private:
  struct Entry {
    bool resolved = false, failed = false;
  };
  using Open = std::map<std::pair<int64_t, uint64_t>, Entry>;  // by (start, key)
  // One prefix of the open attempts: those started at or before now - lag.
  struct Cut {
    int64_t lag = 0;
    int64_t clusters = 0, failures = 0;  // of the open attempts in it
    Open::iterator next;                 // the first open attempt not in it
  };
  void Advance(int64_t now);
  void Insert(uint64_t key, int64_t started, Entry entry);
  void Finalize(const Entry& e);

  StartOrderOptions options_;
  int64_t now_ = INT64_MIN;
  Open open_;              // attempts started within the horizon
  std::vector<Cut> cuts_;  // starts announced: one per lag; reports only: none
  SequentialCounts final_;  // attempts past the horizon, in start order
  int64_t late_ = 0;
};

}  // namespace cincinnati::reports
