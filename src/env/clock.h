// Clock: what time it is, for code whose TTLs, staleness limits, back-offs, token buckets
// and schedules tests must control instead of wait for.
//
//  - Steady() measures durations and never goes back; Now() is the wall-clock time that
//    is stored, compared with documents and shown.
//  - RealClock() reads the system's clocks; every production caller defaults to it.
//    Outside src/env nothing reads the system's clocks but through a Clock, so that one
//    type serves everywhere (tests/env/clock_rule_test.cc keeps it so).
//  - ManualClock stands still until Advance() moves both readings forward by the same
//    amount, so a test steps past a TTL exactly, on any machine, at any load.
// Thread-safe; never throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>

namespace cincinnati::env {

class Clock {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;
  using SystemTime = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;
  virtual SteadyTime Steady() const = 0;
  virtual SystemTime Now() const = 0;
};

// The process's real clocks (a static object: valid for the whole run).
Clock& RealClock();
// The same, for owners that hold their clock by shared_ptr (it is never deleted).
std::shared_ptr<Clock> SharedRealClock();

// The wall-clock reading in whole Unix seconds (truncated, as duration_cast does), for
// code that stores or compares times as seconds.
int64_t UnixSeconds(const Clock& clock);

class ManualClock final : public Clock {
 public:
  // Starts at `start` (by default 2026-01-01T00:00:00Z) and at a steady time well past
  // zero, so that code comparing with a default-constructed time_point behaves as it
  // does on a real machine.
  explicit ManualClock(SystemTime start = SystemTime(std::chrono::seconds(1767225600)));

  SteadyTime Steady() const override;
  SystemTime Now() const override;
  // Moves both readings forward; a negative step is ignored (a clock never goes back).
  void Advance(std::chrono::nanoseconds by);
  // Sets the wall-clock reading alone, either way, as NTP or a restored VM steps a real
  // one; the steady reading does not move.
  void SetNow(SystemTime now);
  // A clock standing at `unix_seconds` (a command's --at, a test's fixed instant).
  static std::shared_ptr<ManualClock> AtUnixSeconds(int64_t unix_seconds);

 private:
  mutable std::mutex mu_;
  SteadyTime steady_;
  SystemTime now_;
};

}  // namespace cincinnati::env
