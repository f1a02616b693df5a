// Fuzz entry points: one per family of untrusted input. Each takes arbitrary bytes,
// runs the parser (and what consumes its result), and aborts only when a property the
// code promises is broken (a parse that does not round-trip, a graph that would be
// served while failing CheckServable...). Crashes, leaks and undefined behaviour are
// the sanitizers' to report.
//
// The same entries serve two builds: libFuzzer targets (fuzz/CMakeLists.txt, clang,
// scripts/fuzz.sh) and the regression test (tests/fuzz/fuzz_regression_test.cc), which
// replays every committed input under fuzz/regressions/<entry>/ in the normal suite.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace cincinnati::fuzz {

using Entry = int (*)(const uint8_t* data, size_t size);

struct NamedEntry {
  const char* name;  // also the target's name: fuzz_<name>
  Entry entry;
};

std::span<const NamedEntry> Entries();

}  // namespace cincinnati::fuzz
