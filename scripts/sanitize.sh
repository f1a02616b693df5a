#!/usr/bin/env bash
# Builds and runs tests under sanitizers, each mode in its own build folder:
#   scripts/sanitize.sh asan   every test under AddressSanitizer + UndefinedBehaviorSanitizer
#                              (and LeakSanitizer), in the hardened build (clang 14, shared
#                              with the fuzz targets: scripts/hardened-build.sh, build-fuzz/)
#   scripts/sanitize.sh tsan   the server and service tests under ThreadSanitizer, in build-tsan/
# Extra arguments go to ctest (e.g. -R Hotfix). Any finding aborts the test, so CTest fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:-asan}"
shift || true
jobs="$(nproc 2>/dev/null || echo 2)"
"$root/scripts/deps.sh"

supp="$root/scripts/sanitizers"
case "$mode" in
  asan)
    build="${CINCINNATI_HARDENED_BUILD_DIR:-$root/build-fuzz}"
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0:strict_string_checks=1"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
    tests=()
    ;;
  tsan)
    build="${CINCINNATI_TSAN_BUILD_DIR:-$root/build-tsan}"
    flags="thread"
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
    # The HTTP server, its services, and the processes the service tests start.
    tests=(-R '^(HttpServerTest|ServicesTest|ServiceTest|RefreshTest|PhasedServiceTest|ChannelTargetTest|HotfixServiceTest|HostileClientTest|UpstreamFaultTest|PrometheusTest|ConfigTest)\.')
    ;;
  *)
    echo "usage: $0 asan|tsan [ctest arguments]" >&2
    exit 2
    ;;
esac

if [ "$mode" = asan ]; then
  "$root/scripts/hardened-build.sh"
else
  if [ ! -f "$build/build.ninja" ]; then
    # RelWithDebInfo-like: optimized enough for the service tests' time limits.
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
      -DCINCINNATI_SANITIZE="$flags" -DCINCINNATI_BENCH=OFF >/dev/null
  fi
  cmake --build "$build" --parallel "$jobs"
fi
cd "$build"
# Sanitized processes are slower; the service tests' own bounded waits allow for it.
ctest --output-on-failure --parallel "${CINCINNATI_TEST_JOBS:-$((jobs + 1))}" "${tests[@]}" "$@"
