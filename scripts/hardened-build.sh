#!/usr/bin/env bash
# Configures (once) and builds the hardened build: clang 14 with AddressSanitizer,
# UndefinedBehaviorSanitizer and libFuzzer's coverage ("fuzzer-no-link"), the tests and
# the libFuzzer targets in one folder, so the sanitized suite (scripts/sanitize.sh asan)
# and the fuzzing (scripts/fuzz.sh) compile every source once between them.
#   scripts/hardened-build.sh [target ...]     default: everything
# The folder is $CINCINNATI_HARDENED_BUILD_DIR, default build-fuzz/ (its name from when
# it held only the fuzz targets; the compiler cache knows it by that path).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CINCINNATI_HARDENED_BUILD_DIR:-$root/build-fuzz}"
jobs="$(nproc 2>/dev/null || echo 2)"
"$root/scripts/deps.sh"
if [ ! -f "$build/build.ninja" ]; then
  # -O1: optimized enough for the service tests' time limits, still readable in traces.
  CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DCINCINNATI_FUZZ=ON -DCINCINNATI_BENCH=OFF \
    -DCINCINNATI_SANITIZE="address,undefined,fuzzer-no-link" >/dev/null
fi
if [ $# -gt 0 ]; then
  cmake --build "$build" --parallel "$jobs" --target "$@"
else
  cmake --build "$build" --parallel "$jobs"
fi
