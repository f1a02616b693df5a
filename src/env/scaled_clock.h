// ScaledClock: simulated time that runs `scale` times as fast as real time, `start` at
// the real instant `epoch` (a fleet simulation and the service it drives). Now() follows
// the system's wall clock, so that processes given the same start, scale and epoch agree
// on the time; Steady() runs at the same rate from the steady clock. Thread-safe.
#pragma once

#include "env/clock.h"

namespace cincinnati::env {

class ScaledClock final : public Clock {
 public:
  ScaledClock(SystemTime start, double scale, SystemTime epoch);
  SteadyTime Steady() const override;
  SystemTime Now() const override;
  double scale() const { return scale_; }

 private:
  SystemTime start_, epoch_;
  double scale_;
  std::chrono::steady_clock::time_point steady_origin_;
};

}  // namespace cincinnati::env
