#!/usr/bin/env bash
# Installs what is missing, builds everything once, and runs every test through CTest;
# then the hardening runs, from one clang build (scripts/hardened-build.sh, build-fuzz/,
# compiled while the plain suite runs):
# the whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer
# (scripts/sanitize.sh asan) and every fuzz target briefly over its committed corpus
# (scripts/fuzz.sh).
#   scripts/test.sh                 everything (what CI runs)
#   scripts/test.sh -R Hotfix       only the matching tests, plain build, no hardening
#   CINCINNATI_QUICK=1 scripts/test.sh   the plain suite only
#   scripts/test.sh --stress N [ctest arguments]
#                                   the suite N times, plain and under ASan + UBSan, with
#                                   two CPU-burning processes alongside; lists every test
#                                   that failed at least once (CINCINNATI_QUICK=1: plain only)
# ThreadSanitizer is not run here (its own build would add ~22 min cold on 2 cores): run
# scripts/sanitize.sh tsan (or tsan-server, tsan-fleet) after changes to threads or locks.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CINCINNATI_BUILD_DIR:-$root/build}"
# The conformance tests read the project's upstream fixtures; without them a third of the
# suite would fail with file errors, so say so at once.
fixtures="${CINCINNATI_SHARED_FIXTURES:-$root/../shared/fixtures}"
if [ ! -d "$fixtures" ]; then
  echo "test.sh: the upstream fixtures are not at $fixtures: check out next to the project's shared/" \
       "folder, or set CINCINNATI_SHARED_FIXTURES to its fixtures/ directory" >&2
  exit 2
fi
export CINCINNATI_SHARED_FIXTURES="$(cd "$fixtures" && pwd)"
"$root/scripts/deps.sh" --test
"$root/scripts/build.sh"
if [ "${1:-}" = --stress ]; then
  shift
  exec "$root/scripts/stress.sh" "$@"
fi
# One test more than cores: most tests wait on processes and sockets most of the time
# (the plain suite keeps two cores about a third busy at one test per core).
export CINCINNATI_TEST_JOBS="${CINCINNATI_TEST_JOBS:-$(( $(nproc 2>/dev/null || echo 2) + 1 ))}"
full=0
if [ $# -eq 0 ] && [ "${CINCINNATI_QUICK:-0}" != 1 ]; then full=1; fi
if [ "$full" = 1 ]; then
  # The hardened build compiles while the plain suite runs: the suite mostly waits on
  # processes and sockets, and it is made to pass on a busy machine (--stress). This
  # takes about two minutes off the whole command on two cores.
  hardened="${CINCINNATI_HARDENED_BUILD_DIR:-$root/build-fuzz}"
  mkdir -p "$hardened"
  # Its own process group (setsid), so that a failed plain suite stops the compilers too.
  setsid "$root/scripts/hardened-build.sh" >"$hardened/hardened-build.log" 2>&1 &
  hardened_pid=$!
  trap 'kill -- "-$hardened_pid" 2>/dev/null || true' EXIT
fi
plain_rc=0
(cd "$build" && ctest --output-on-failure --parallel "$CINCINNATI_TEST_JOBS" "$@") || plain_rc=$?
if [ "$plain_rc" -ne 0 ]; then exit "$plain_rc"; fi
if [ "$full" = 1 ]; then
  echo "== the hardened build (clang, ASan + UBSan, fuzz targets)" >&2
  hardened_rc=0
  wait "$hardened_pid" || hardened_rc=$?
  trap - EXIT
  cat "$hardened/hardened-build.log"
  if [ "$hardened_rc" -ne 0 ]; then
    echo "test.sh: the hardened build failed (log: $hardened/hardened-build.log)" >&2
    exit "$hardened_rc"
  fi
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer suite" >&2
  "$root/scripts/sanitize.sh" asan
  echo "== fuzz targets, ${CINCINNATI_FUZZ_SECS:-5} s each" >&2
  "$root/scripts/fuzz.sh" "${CINCINNATI_FUZZ_SECS:-5}"
fi
