// Randomness of a fleet simulation as pure functions of (seed, cluster, purpose, ...):
// every draw (a cluster's id, poll interval and phase, start version, admin delay,
// update duration, whether an update fails) is a hash, not a step of a shared
// generator. So a draw does not depend on the order events happen in, and two runs
// with the same seed that differ only in what the service does (brakes on or off) put
// the same clusters on the same versions and make the same clusters fail the same
// edges: their differences are the service's doing. Pure; never throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cincinnati::fleet {

enum class Draw : uint64_t {
  kIdHigh = 1,
  kIdLow,
  kInterval,
  kPhase,
  kStartVersion,
  kAutoUpdate,
  kDelay,
  kDuration,
  kFailure,
};

inline uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline uint64_t HashText(std::string_view text) {  // FNV-1a: version names into draws
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

inline uint64_t DrawBits(uint64_t seed, uint64_t cluster, Draw draw, uint64_t a = 0, uint64_t b = 0) {
  return Mix(Mix(Mix(Mix(seed) ^ cluster) ^ static_cast<uint64_t>(draw)) ^ Mix(a) ^ (b * 0x9e3779b97f4a7c15ULL));
}

// Uniform in [0, 1).
inline double DrawUnit(uint64_t seed, uint64_t cluster, Draw draw, uint64_t a = 0, uint64_t b = 0) {
  return static_cast<double>(DrawBits(seed, cluster, draw, a, b) >> 11) * 0x1.0p-53;
}

// A version 4 UUID, lower case: the cluster's id on every request and report.
inline std::string ClusterId(uint64_t seed, uint64_t cluster) {
  const uint64_t hi = DrawBits(seed, cluster, Draw::kIdHigh), lo = DrawBits(seed, cluster, Draw::kIdLow);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(36, '-');
  auto put = [&](size_t at, uint64_t bits, int digits) {
    for (int i = digits - 1; i >= 0; --i, bits >>= 4) id[at + static_cast<size_t>(i)] = kHex[bits & 15];
  };
  put(0, hi >> 32, 8);
  put(9, hi >> 16, 4);
  put(14, 0x4000 | (hi & 0x0fff), 4);
  put(19, 0x8000 | (lo >> 48 & 0x3fff), 4);
  put(24, lo, 12);
  return id;
}

}  // namespace cincinnati::fleet
