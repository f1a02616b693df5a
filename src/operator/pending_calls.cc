#include "operator/pending_calls.h"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <exception>
#include <mutex>

namespace cincinnati::upgrade {
namespace {

StepResult RunGuarded(const std::function<StepResult()>& call) {
  try {
    return call();
  } catch (const std::exception& e) {
    return StepResult::Error(std::string("the call failed: ") + e.what());
  } catch (...) {
    return StepResult::Error("the call failed");
  }
}

}  // namespace

struct CallRunner::Pool {
  explicit Pool(int threads) : pool(static_cast<size_t>(threads > 0 ? threads : 1)) {}
  std::mutex mu;
  std::condition_variable idle;
  size_t outstanding = 0;  // posted and not yet ended (under mu)
  boost::asio::thread_pool pool;  // last: its threads use the rest
};

CallRunner::CallRunner(int threads) : pool_(std::make_unique<Pool>(threads)) {}

CallRunner::~CallRunner() {
  pool_->pool.stop();
  pool_->pool.join();
}

void CallRunner::Post(std::function<void()> work) {
  {
    std::lock_guard lock(pool_->mu);
    ++pool_->outstanding;
  }
  boost::asio::post(pool_->pool, [pool = pool_.get(), work = std::move(work)] {
    work();
    std::lock_guard lock(pool->mu);
    if (--pool->outstanding == 0) pool->idle.notify_all();
  });
}

bool CallRunner::WaitIdle(std::chrono::milliseconds limit) {
  std::unique_lock lock(pool_->mu);
  return pool_->idle.wait_for(lock, limit, [&] { return pool_->outstanding == 0; });
}

PendingCalls::PendingCalls(CallRunner* runner, std::function<void()> on_finished, std::function<bool()> may_start)
    : runner_(runner), on_finished_(std::move(on_finished)), may_start_(std::move(may_start)) {}

std::optional<StepResult> PendingCalls::Await(const std::string& key, std::function<StepResult()> call) {
  if (!runner_) return RunGuarded(call);
  std::shared_ptr<Call> started;
  {
    std::lock_guard lock(mu_);
    auto it = calls_.find(key);
    if (it != calls_.end()) {
      Call& existing = *it->second;
      if (!existing.finished) {
        waited_ = true;
        return std::nullopt;
      }
      return existing.result;
    }
    waited_ = true;
    started = std::make_shared<Call>();
    calls_[key] = started;
  }
  runner_->Post([this, started, generation = generation_.load(), call = std::move(call)] {
    // Queued before a Reset (an earlier term), or this replica may not act: not started.
    const bool current = generation == generation_.load() && (!may_start_ || may_start_());
    StepResult result = current ? RunGuarded(call) : StepResult::NotDone("this replica does not lead");
    {
      std::lock_guard lock(mu_);
      started->result = std::move(result);
      started->finished = true;
    }
    if (on_finished_) on_finished_();
  });
  return std::nullopt;
}

bool PendingCalls::Running(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = calls_.find(key);
  return it != calls_.end() && !it->second->finished;
}

int PendingCalls::RetryAfter(const std::string& key, TimePoint not_before) {
  std::lock_guard lock(mu_);
  Retry& retry = retries_[key];
  retry.not_before = not_before;
  return ++retry.failures;
}

int PendingCalls::Failures(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = retries_.find(key);
  return it == retries_.end() ? 0 : it->second.failures;
}

std::optional<PendingCalls::TimePoint> PendingCalls::NotBefore(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = retries_.find(key);
  if (it == retries_.end()) return std::nullopt;
  return it->second.not_before;
}

void PendingCalls::Forget(const std::string& key) {
  std::lock_guard lock(mu_);
  retries_.erase(key);
}

std::optional<PendingCalls::TimePoint> PendingCalls::SoonestRetry(TimePoint after) const {
  std::lock_guard lock(mu_);
  std::optional<TimePoint> soonest;
  for (const auto& [key, retry] : retries_) {
    if (retry.not_before > after && (!soonest || retry.not_before < *soonest)) soonest = retry.not_before;
  }
  return soonest;
}

void PendingCalls::BeginPass() {
  std::lock_guard lock(mu_);
  waited_ = false;
}

void PendingCalls::Reset() {
  std::lock_guard lock(mu_);
  ++generation_;
  // A call that runs keeps its place, so that it is never started twice at once.
  std::erase_if(calls_, [](const auto& entry) { return entry.second->finished; });
  retries_.clear();
}

void PendingCalls::EndPass() {
  std::lock_guard lock(mu_);
  if (waited_) return;
  std::erase_if(calls_, [](const auto& entry) { return entry.second->finished; });
}

}  // namespace cincinnati::upgrade
