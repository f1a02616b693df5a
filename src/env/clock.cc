#include "env/clock.h"

namespace cincinnati::env {
namespace {

class SystemClocks final : public Clock {
 public:
  SteadyTime Steady() const override { return std::chrono::steady_clock::now(); }
  SystemTime Now() const override { return std::chrono::system_clock::now(); }
};

}  // namespace

Clock& RealClock() {
  static SystemClocks clocks;
  return clocks;
}

std::shared_ptr<Clock> SharedRealClock() { return std::shared_ptr<Clock>(&RealClock(), [](Clock*) {}); }

int64_t UnixSeconds(const Clock& clock) {
  return std::chrono::duration_cast<std::chrono::seconds>(clock.Now().time_since_epoch()).count();
}

ManualClock::ManualClock(SystemTime start) : steady_(std::chrono::hours(24 * 365)), now_(start) {}

Clock::SteadyTime ManualClock::Steady() const {
  std::lock_guard lock(mu_);
  return steady_;
}

Clock::SystemTime ManualClock::Now() const {
  std::lock_guard lock(mu_);
  return now_;
}

void ManualClock::Advance(std::chrono::nanoseconds by) {
  if (by.count() <= 0) return;
  std::lock_guard lock(mu_);
  steady_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(by);
  now_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(by);
}

std::shared_ptr<ManualClock> ManualClock::AtUnixSeconds(int64_t unix_seconds) {
  return std::make_shared<ManualClock>(SystemTime(std::chrono::seconds(unix_seconds)));
}

void ManualClock::SetNow(SystemTime now) {
  std::lock_guard lock(mu_);
  now_ = now;
}

}  // namespace cincinnati::env
