#include "env/scaled_clock.h"

namespace cincinnati::env {

ScaledClock::ScaledClock(SystemTime start, double scale, SystemTime epoch)
    : start_(start), epoch_(epoch), scale_(scale), steady_origin_(std::chrono::steady_clock::now()) {}

Clock::SteadyTime ScaledClock::Steady() const {
  const std::chrono::duration<double> real = std::chrono::steady_clock::now() - steady_origin_;
  return steady_origin_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(real * scale_);
}

Clock::SystemTime ScaledClock::Now() const {
  const std::chrono::duration<double> real = std::chrono::system_clock::now() - epoch_;
  return start_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(real * scale_);
}

}  // namespace cincinnati::env
