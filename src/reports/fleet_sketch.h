// FleetSketch: a HyperLogLog sketch of a set of ids, so that replicas that each saw part
// of a fleet (and parts of one another's) can count it whole: the sketch of a union is
// the register-wise maximum of the parts' sketches, so an id seen by every replica
// counts once, however many replicas saw it.
//
// Precision 12: 4096 one-byte registers (4 KiB, serialized as they are), a standard
// error of 1.04/sqrt(4096) = 1.6 %, whatever the count; a precision of 14 would give
// 0.8 % for 16 KiB per version and replica, more than an adoption chart needs. Add()
// takes a 64-bit hash that must be uniform (SipHash of the id here): its top 12 bits
// pick a register, the rank of the rest (leading zeros + 1, at most 53) is kept if larger.
//
// Estimate() is Ertl's estimator ("New cardinality estimation algorithms for HyperLogLog
// sketches", 2017, also Redis's): the raw HyperLogLog estimate with its small-range
// correction built in (the empty registers' term, which is linear counting while most
// registers are empty) and without the bias bump where the classic estimator hands
// over from linear counting (around 2.5 x 4096 ids); no large-range correction is
// needed with 64-bit hashes.
//
// Bytes()/FromBytes(): the 4096 registers in order. Parsing is total: anything but
// 4096 bytes of values 0..53 is an error. Not thread-safe (a value type).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace cincinnati::server {

// The key ids are hashed with before they go into a sketch: the same in every replica,
// or their sketches would not agree on an id.
using SketchKey = std::array<uint64_t, 2>;

// The fixed key used when no secret one is given. Public, so that anyone may compute
// where an id lands: they can then pick ids (offline, about 2^r tries for a rank of r)
// that raise a version's estimate with fewer polls than as many real ids would take.
// That only skews a chart nothing decides on (registers only grow: nothing can be hidden
// from it), and polling with invented ids inflates the local counts just as well.
SketchKey DefaultSketchKey();
// A key from 16 bytes (a secret the replicas share); anything else is an error.
Result<SketchKey> SketchKeyFromBytes(std::string_view bytes);

class FleetSketch {
 public:
  static constexpr int kPrecision = 12;
  static constexpr size_t kRegisters = size_t{1} << kPrecision;
  static constexpr uint8_t kMaxRank = 64 - kPrecision + 1;

  void Add(uint64_t hash);
  // This sketch becomes the union's.
  void Merge(const FleetSketch& other);
  // The estimated number of distinct ids added (0 when none was).
  double Estimate() const;
  bool empty() const;

  std::string Bytes() const;
  static Result<FleetSketch> FromBytes(std::string_view bytes);

  bool operator==(const FleetSketch&) const = default;

 private:
  std::array<uint8_t, kRegisters> registers_{};
};

}  // namespace cincinnati::server
