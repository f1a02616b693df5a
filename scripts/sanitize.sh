#!/usr/bin/env bash
# Builds and runs tests under sanitizers, each mode in its own build folder:
#   scripts/sanitize.sh asan   every test under AddressSanitizer + UndefinedBehaviorSanitizer
#                              (and LeakSanitizer), in the hardened build (clang 14, shared
#                              with the fuzz targets: scripts/hardened-build.sh, build-fuzz/)
#   scripts/sanitize.sh tsan   under ThreadSanitizer, in build-tsan/ (gcc 12, -O1): the
#                              server and service tests, then all of agent_test,
#                              operator_test and fleet_file_test (the update agent's and
#                              the upgrade operator's threads, and the `cincinnati`
#                              processes they start, built with TSan too)
#   scripts/sanitize.sh tsan-server   only the server and service tests
#   scripts/sanitize.sh tsan-fleet    only the agent's and the operator's tests
# A documented mode, not part of scripts/test.sh (CI time): on 2 cores shared with other
# builds, the TSan build of `cincinnati` and the agent's and operator's tests took 20 min
# from a cold cache, server_test and service_test 2 min more; the runs take about 40 s
# (tsan-server), 2-3 min (tsan-fleet) and 2-3 min (tsan), at 3 tests at once.
# Extra arguments go to ctest (a -R of yours replaces the mode's selection, e.g.
# tsan-fleet -R '^UpdateTest\.'; --repeat until-fail:N looks harder for a rare race). Any
# finding aborts the process, so CTest fails. ThreadSanitizer writes its reports to
# build-tsan/tsan-reports/report.EXE.PID (TSAN_OPTIONS log_path), so that a race in a
# `cincinnati` process a test started is not lost with the test's temporary directory:
# they are printed at the end, and any report fails the run even when the test passed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:-asan}"
shift || true
jobs="$(nproc 2>/dev/null || echo 2)"
"$root/scripts/deps.sh"

supp="$root/scripts/sanitizers"
server_tests='HttpServerTest|ServicesTest|ServiceTest|RefreshTest|PhasedServiceTest|ChannelTargetTest|HotfixServiceTest|HostileClientTest|UpstreamFaultTest|PrometheusTest|ConfigTest'
fleet_binaries=(agent_test operator_test fleet_file_test)
case "$mode" in
  asan)
    build="${CINCINNATI_HARDENED_BUILD_DIR:-$root/build-fuzz}"
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0:strict_string_checks=1"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
    ;;
  tsan) targets=(cincinnati server_test service_test "${fleet_binaries[@]}") ;;
  tsan-server) targets=(cincinnati server_test service_test) ;;
  tsan-fleet) targets=(cincinnati "${fleet_binaries[@]}") ;;
  *)
    echo "usage: $0 asan|tsan|tsan-server|tsan-fleet [ctest arguments]" >&2
    exit 2
    ;;
esac

if [ "$mode" = asan ]; then
  "$root/scripts/hardened-build.sh"
  cd "$build"
  # Sanitized processes are slower; the service tests' own bounded waits allow for it.
  exec ctest --output-on-failure --parallel "${CINCINNATI_TEST_JOBS:-$((jobs + 1))}" "$@"
fi

build="${CINCINNATI_TSAN_BUILD_DIR:-$root/build-tsan}"
if [ ! -f "$build/build.ninja" ]; then
  # RelWithDebInfo-like: optimized enough for the service tests' time limits.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DCINCINNATI_SANITIZE=thread -DCINCINNATI_BENCH=OFF >/dev/null
fi
# Only what the selected tests run: a TSan build of every test binary would double the time.
cmake --build "$build" --parallel "$jobs" --target "${targets[@]}"

# The CTest selection: the server and service suites by name, and every suite of the
# agent's and the operator's binaries, as they list them (unbuilt binaries stay out).
suites=()
case "$mode" in tsan | tsan-server) suites+=("$server_tests") ;; esac
case "$mode" in
  tsan | tsan-fleet)
    for binary in "${fleet_binaries[@]}"; do
      # Suite lines end with "."; parameterized ones have a "  # TypeParam" comment.
      listed="$("$build/tests/$binary" --gtest_list_tests | sed -n 's/^\([^ ][^ ]*\)\.\( .*\)\{0,1\}$/\1/p' | paste -sd'|')"
      if [ -z "$listed" ]; then
        echo "sanitize.sh: $binary lists no tests" >&2
        exit 1
      fi
      suites+=("$listed")
    done
    ;;
esac
selection="^($(IFS='|'; echo "${suites[*]}"))\\."

reports="$build/tsan-reports"
rm -rf "$reports"
mkdir -p "$reports"
# log_exe_name: each file names the binary it came from (report.cincinnati.PID, a child).
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp:log_path=$reports/report:log_exe_name=1"
cd "$build"
started=$SECONDS
ctest_rc=0
# Sanitized processes are slower; the tests' own bounded waits allow for it.
ctest --output-on-failure --parallel "${CINCINNATI_TEST_JOBS:-$((jobs + 1))}" -R "$selection" "$@" || ctest_rc=$?
echo "sanitize.sh: $mode ran in $((SECONDS - started)) s" >&2
found=("$reports"/report.*)
if [ -e "${found[0]}" ]; then
  for file in "${found[@]}"; do
    echo "== ThreadSanitizer: $(basename "$file") (written $(date -r "$file" +%T))" >&2
    cat "$file" >&2
  done
  echo "sanitize.sh: ${#found[@]} ThreadSanitizer report(s) in $reports" >&2
  exit 1
fi
exit "$ctest_rc"
