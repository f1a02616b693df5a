// PeriodicTask: runs a function on its own thread at once and then `period` after
// each run ends (or at once after Wake()), until Stop() or until the function returns
// false.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace cincinnati::server {

class PeriodicTask {
 public:
  PeriodicTask() = default;
  ~PeriodicTask() { Stop(); }
  PeriodicTask(const PeriodicTask&) = delete;
  PeriodicTask& operator=(const PeriodicTask&) = delete;

  void Start(std::chrono::milliseconds period, std::function<bool()> run) {
    if (thread_.joinable()) return;
    thread_ = std::thread([this, period, run = std::move(run)] {
      while (!stop_ && run()) {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait_for(lock, period, [this] { return stop_.load() || woken_; });
        woken_ = false;
      }
    });
  }

  // The next run starts now, or right after the current one.
  void Wake() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      woken_ = true;
    }
    wake_.notify_all();
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<bool> stop_{false};
  bool woken_ = false;  // under mu_
  std::thread thread_;
};

}  // namespace cincinnati::server
