#!/usr/bin/env bash
# Builds the libFuzzer targets (clang 14, ASan + UBSan; the hardened build of
# scripts/hardened-build.sh, build-fuzz/, which also holds the sanitized suite) and runs each
# for a given time, starting from a corpus of the committed seeds, the crashes already
# found (fuzz/regressions) and the upstream fixtures and examples.
#
#   scripts/fuzz.sh [seconds per target, default 60] [target ...]
#
# The working corpus (build-fuzz/corpus/<target>) grows between local runs. A crash
# stops the run with its input in build-fuzz/artifacts/<target>/: copy it to
# fuzz/regressions/<target>/ once fixed. Executions and coverage per target are
# printed and written to build-fuzz/fuzz-summary.txt.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CINCINNATI_HARDENED_BUILD_DIR:-$root/build-fuzz}"
seconds="${1:-60}"
shift || true
"$root/scripts/hardened-build.sh" fuzz_all

fixtures="$root/../shared/fixtures"
seed_dirs() {  # target -> directories and files that seed it
  local t="$1"
  echo "$root/fuzz/seeds/$t"
  [ -d "$root/fuzz/regressions/$t" ] && echo "$root/fuzz/regressions/$t"
  case "$t" in
    graph_json|agent_graph|agent_answer) [ -d "$fixtures" ] && find "$fixtures/policy-engine-golden" "$fixtures/plugins" "$fixtures/secondary-metadata" -name '*.json' -size -200k ;;
    graph_data_yaml) find "$root/examples" -name '*.yaml'
      [ -d "$fixtures" ] && find "$fixtures" -name '*.yaml' | head -120 ;;
    raw_metadata) [ -d "$fixtures" ] && find "$fixtures" -path '*raw/metadata.json' ;;
    release_metadata) find "$root/examples" -path '*releases/*.json' ;;
  esac
  return 0
}

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$build"/fuzz/fuzz_*; do targets+=("$(basename "$f" | sed 's/^fuzz_//')"); done
fi
summary="$build/fuzz-summary.txt"
printf '%-18s %10s %8s %8s %6s\n' target executions exec/s coverage crash > "$summary"

# One target: its corpus, seeds and dictionary; writes its row to $build/fuzz-$t.row
# and returns non-zero when it found something.
fuzz_one() {
  local t="$1" corpus="$build/corpus/$1" artifacts="$build/artifacts/$1" log="$build/fuzz-$1.log" rc=0
  mkdir -p "$corpus" "$artifacts"
  # The seeds join the working corpus (copied: libFuzzer writes into the first dir).
  while read -r src; do
    if [ -d "$src" ]; then find "$src" -type f -exec cp -n {} "$corpus/" \; ; elif [ -f "$src" ]; then
      cp -n "$src" "$corpus/$(echo "$src" | sha1sum | cut -c1-12)-$(basename "$src")"; fi
  done < <(seed_dirs "$t")
  local dict=()
  [ -f "$root/fuzz/dicts/$t.dict" ] && dict=(-dict="$root/fuzz/dicts/$t.dict")
  "$build/fuzz/fuzz_$t" "$corpus" "${dict[@]}" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1 || rc=$?
  local execs speed cov crash=no
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
  [ "$rc" -ne 0 ] && crash=YES
  printf '%-18s %10s %8s %8s %6s\n' "$t" "${execs:-?}" "${speed:-?}" "${cov:-?}" "$crash" > "$build/fuzz-$t.row"
  return "$rc"
}

# One target per core at a time (each is one single-threaded process); rows and
# findings are reported in the targets' order whatever order they end in.
jobs="${CINCINNATI_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}"
declare -A pid_of
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
  fuzz_one "$t" & pid_of[$t]=$!
  running=$((running + 1))
done
status=0
for t in "${targets[@]}"; do
  rc=0
  wait "${pid_of[$t]}" || rc=$?
  if [ "$rc" -ne 0 ]; then
    status=1
    echo "fuzz_$t failed (exit $rc); input in $build/artifacts/$t, log $build/fuzz-$t.log:" >&2
    grep -m1 -A25 -E 'ERROR: |runtime error|property violated|deadly signal' "$build/fuzz-$t.log" >&2 ||
      tail -30 "$build/fuzz-$t.log" >&2
  fi
  tee -a "$summary" < "$build/fuzz-$t.row"
done
echo "summary: $summary"
exit "$status"
