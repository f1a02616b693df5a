#!/usr/bin/env bash
# Configures (once) and builds into build/: everything (the library, the `cincinnati`
# executable, the tests and the benchmarks), or only the targets named as arguments
# (run.sh builds just `cincinnati`). One build directory serves run.sh and test.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CINCINNATI_BUILD_DIR:-$root/build}"
jobs="$(nproc 2>/dev/null || echo 2)"

"$root/scripts/deps.sh"

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
if [ $# -gt 0 ]; then
  cmake --build "$build" --parallel "$jobs" --target "$@"
else
  cmake --build "$build" --parallel "$jobs"
fi
