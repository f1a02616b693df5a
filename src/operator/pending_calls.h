// PendingCalls: the slow calls of one cluster's steps (hooks, dependency probes,
// webhooks, Prometheus and Alertmanager), run outside its pass so that no pass ever
// waits on a peer. Each call is bounded by its own time limit (the hook timeout, the
// HTTP timeouts of its port), never by the pass.
//
// A step asks Await(key, call):
//  - no call under `key` yet: the call starts on the runner and Await returns nullopt
//    (the step answers "not done yet"); a running call is never started twice;
//  - finished: its result, to every ask.
// Results live as long as the passes chained by calls: a pass that waited on a call
// (an ask returned nullopt) keeps every result for the next one, since every pass
// starts again at the first step, and a chain of steps that each wait on a call (or
// one step that waits on two) must not start them over one by one, forever. A pass
// that waited on no call drops every finished result: the next pass, an interval
// later, asks its peers afresh (as the MUO's reconcile does), and an old hook answer
// is never taken for a new one.
// When a call finishes, `on_finished` runs (the operator requeues the cluster at once),
// so a pass that waits on a call ends as soon as it can.
//
// Retries are scheduled, never slept: a step records a failed attempt with
// RetryAfter(key, time) and asks NotBefore(key) on later passes; SoonestRetry() tells
// the operator how soon to run the cluster's next pass.
//
// A gate (`may_start`, optional) is asked on the runner's thread just before a call
// starts: when it says no (a replica that no longer leads), the call does not run and
// its result is "not done". Reset() drops every finished result and retry (a new
// leadership term asks its peers afresh) and keeps a call that runs (never two at once);
// a call still queued from before it does not start.
//
// Without a runner (ReconcileOnce driven directly by tests and benchmarks) a call runs
// inside Await and its result is returned at once: the steps behave as when every call
// is instant. A call that throws is an error result (no exception leaves the runner).
//
// Thread-safe: Await/BeginPass/EndPass on the cluster's pass (never two at once), the
// results from the runner's threads. A PendingCalls must outlive the calls it posted:
// destroy (or drain) the runner first, as the operator does.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "operator/step_runner.h"

namespace cincinnati::upgrade {

// A bounded pool of threads for every cluster's calls, in the order they were started.
// Destroying it waits for the calls that run (each bounded by its time limit) and drops
// the ones that did not start. WaitIdle waits until no call is queued or running (a
// leader's clean end: its term's calls are over), at most `limit` of real time (the
// calls' own limits bound it; the limit is a safety net).
class CallRunner {
 public:
  explicit CallRunner(int threads);
  ~CallRunner();
  CallRunner(const CallRunner&) = delete;
  CallRunner& operator=(const CallRunner&) = delete;
  void Post(std::function<void()> work);
  bool WaitIdle(std::chrono::milliseconds limit);

 private:
  struct Pool;
  std::unique_ptr<Pool> pool_;
};

class PendingCalls {
 public:
  using TimePoint = std::chrono::system_clock::time_point;

  // `runner` null: calls run inline. `on_finished` is called on the runner's thread.
  explicit PendingCalls(CallRunner* runner = nullptr, std::function<void()> on_finished = {},
                        std::function<bool()> may_start = {});

  std::optional<StepResult> Await(const std::string& key, std::function<StepResult()> call);
  bool Running(const std::string& key) const;

  // Retry bookkeeping (operator time): failures counted per key until Forget(key).
  int RetryAfter(const std::string& key, TimePoint not_before);  // returns the failures so far
  int Failures(const std::string& key) const;
  std::optional<TimePoint> NotBefore(const std::string& key) const;
  void Forget(const std::string& key);
  std::optional<TimePoint> SoonestRetry(TimePoint after) const;  // the soonest retry later than `after`

  // Around each pass of the cluster.
  void BeginPass();
  void EndPass();
  void Reset();

 private:
  struct Call {
    bool finished = false;
    StepResult result;
  };
  struct Retry {
    int failures = 0;
    TimePoint not_before{};
  };
  CallRunner* runner_;
  std::function<void()> on_finished_;
  std::function<bool()> may_start_;
  std::atomic<uint64_t> generation_{0};  // Reset()s so far
  mutable std::mutex mu_;
  bool waited_ = false;  // an ask of this pass returned nullopt
  std::map<std::string, std::shared_ptr<Call>> calls_;
  std::map<std::string, Retry> retries_;
};

}  // namespace cincinnati::upgrade
