#!/usr/bin/env bash
# The test suite on a busy machine: N runs of every test, plain (build/) and under
# ASan + UBSan (the hardened build, build-fuzz/), with two CPU-burning processes alongside, then a list of
# every test that failed at least once and how often. Exit status 1 if any did.
#
#   scripts/stress.sh N [ctest arguments]     (also: scripts/test.sh --stress N ...)
#   CINCINNATI_QUICK=1 scripts/stress.sh N    plain only
#
# Logs of failed runs stay in build*/stress/run-<i>.log.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:?usage: $0 N [ctest arguments]}"
shift
case "$runs" in '' | *[!0-9]* | 0) echo "stress.sh: N must be a number of runs (1 or more), not '$runs'" >&2; exit 2 ;; esac
jobs="$(nproc 2>/dev/null || echo 2)"
plain="${CINCINNATI_BUILD_DIR:-$root/build}"

# A verdict is only worth something for a known tree: say which commit is tested, and
# refuse uncommitted changes (CINCINNATI_STRESS_DIRTY=1 runs them anyway, and says so).
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  tested="$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
  if [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] && [ "${CINCINNATI_STRESS_DIRTY:-0}" != 1 ]; then
    echo "stress.sh: the tree has uncommitted changes; commit them (or set CINCINNATI_STRESS_DIRTY=1)" >&2
    exit 2
  fi
else
  tested="not a git checkout"
fi
echo "stress: testing $tested" >&2
asan="${CINCINNATI_HARDENED_BUILD_DIR:-$root/build-fuzz}"

"$root/scripts/build.sh"
builds=("$plain")
if [ "${CINCINNATI_QUICK:-0}" != 1 ]; then
  # Builds the hardened build and runs nothing (a pattern no test has).
  mkdir -p "$asan/stress"
  if ! "$root/scripts/sanitize.sh" asan -R '^$' >"$asan/stress/build.log" 2>&1; then
    tail -40 "$asan/stress/build.log" >&2
    echo "stress.sh: the ASan build failed (log: $asan/stress/build.log)" >&2
    exit 1
  fi
  builds+=("$asan")
fi

burners=()
stop_burners() { for p in "${burners[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_burners EXIT
trap 'exit 130' INT TERM
for _ in 1 2; do
  (while :; do :; done) &
  burners+=("$!")
done

declare -A failures=()
for build in "${builds[@]}"; do
  mode="$(basename "$build")"
  mkdir -p "$build/stress"
  for i in $(seq 1 "$runs"); do
    log="$build/stress/run-$i.log"
    failed_list="$build/Testing/Temporary/LastTestsFailed.log"
    rm -f "$failed_list"  # ctest leaves the last run's list when all pass
    rc=0
    if [ "$build" = "$asan" ]; then
      "$root/scripts/sanitize.sh" asan "$@" >"$log" 2>&1 || rc=$?
    else
      (cd "$build" && ctest --output-on-failure --parallel "$((jobs + 1))" "$@") >"$log" 2>&1 || rc=$?
    fi
    summary="$(grep -E '^[0-9]+% tests passed' "$log" || echo "no summary (ctest exit $rc)")"
    echo "stress: $mode run $i/$runs: $summary" >&2
    if [ "$rc" -eq 0 ]; then
      rm -f "$log"
    elif [ -s "$failed_list" ]; then
      while IFS=: read -r _ name; do
        key="$mode $name"
        failures["$key"]=$(( ${failures["$key"]:-0} + 1 ))
      done < "$failed_list"
    else  # failed before or besides any test: counted as such
      key="$mode (run exited $rc without a failed test; see $log)"
      failures["$key"]=$(( ${failures["$key"]:-0} + 1 ))
    fi
  done
done

if [ ${#failures[@]} -eq 0 ]; then
  echo "stress: every test passed all $runs run(s) in: ${builds[*]##*/} ($tested)" >&2
  exit 0
fi
echo "stress: tests that failed at least once (of $runs run(s) each, $tested):" >&2
for key in "${!failures[@]}"; do printf '  %s  %d/%d\n' "$key" "${failures[$key]}" "$runs"; done | sort >&2
exit 1
