#include "reports/fleet_sketch.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace cincinnati::server {
namespace {

constexpr double kM = static_cast<double>(FleetSketch::kRegisters);
constexpr int kQ = 64 - FleetSketch::kPrecision;  // the hash bits a rank is read from

// sigma(x) = x + sum over k >= 1 of x^(2^k) 2^(k-1): the empty registers' share.
double Sigma(double x) {
  if (x == 1) return std::numeric_limits<double>::infinity();
  double y = 1, z = x, previous;
  do {
    x *= x;
    previous = z;
    z += x * y;
    y += y;
  } while (z != previous);
  return z;
}

// tau(x) = (1 - x - sum over k >= 1 of (1 - x^(2^-k))^2 2^-k) / 3: the full registers' share.
double Tau(double x) {
  if (x == 0 || x == 1) return 0;
  double y = 1, z = 1 - x, previous;
  do {
    x = std::sqrt(x);
    previous = z;
    y *= 0.5;
    z -= (1 - x) * (1 - x) * y;
  } while (z != previous);
  return z / 3;
}

}  // namespace

SketchKey DefaultSketchKey() {
  // "cincinnati-fleet" as two little-endian words: any fixed value would do.
  return {0x74616e6e69636e69ULL, 0x7465656c662d6974ULL};
}

Result<SketchKey> SketchKeyFromBytes(std::string_view bytes) {
  if (bytes.size() != 16) return Status::InvalidArgument(fmt::format("a sketch key is 16 bytes, not {}", bytes.size()));
  SketchKey key;
  std::memcpy(key.data(), bytes.data(), 16);
  return key;
}

void FleetSketch::Add(uint64_t hash) {
  const size_t index = hash >> kQ;
  const uint64_t rest = hash << kPrecision;  // the other 52 bits, at the top
  const auto rank = static_cast<uint8_t>(rest == 0 ? kMaxRank : std::countl_zero(rest) + 1);
  registers_[index] = std::max(registers_[index], rank);
}

void FleetSketch::Merge(const FleetSketch& other) {
  for (size_t i = 0; i < kRegisters; ++i) registers_[i] = std::max(registers_[i], other.registers_[i]);
}

double FleetSketch::Estimate() const {
  std::array<uint32_t, kMaxRank + 1> histogram{};
  for (uint8_t r : registers_) ++histogram[r];
  if (histogram[0] == kRegisters) return 0;
  double z = kM * Tau(1 - histogram[kMaxRank] / kM);
  for (int k = kQ; k >= 1; --k) z = 0.5 * (z + histogram[k]);
  z += kM * Sigma(histogram[0] / kM);
  return kM * kM / (2 * std::log(2.0)) / z;
}

bool FleetSketch::empty() const {
  return std::all_of(registers_.begin(), registers_.end(), [](uint8_t r) { return r == 0; });
}

std::string FleetSketch::Bytes() const { return std::string(registers_.begin(), registers_.end()); }

Result<FleetSketch> FleetSketch::FromBytes(std::string_view bytes) {
  if (bytes.size() != kRegisters) {
    return Status::InvalidArgument(fmt::format("a fleet sketch is {} bytes, not {}", kRegisters, bytes.size()));
  }
  FleetSketch sketch;
  for (size_t i = 0; i < kRegisters; ++i) {
    const auto r = static_cast<uint8_t>(bytes[i]);
    if (r > kMaxRank) return Status::InvalidArgument(fmt::format("a fleet sketch's register {} is {}, above {}", i, r, kMaxRank));
    sketch.registers_[i] = r;
  }
  return sketch;
}

}  // namespace cincinnati::server
