#!/usr/bin/env bash
# An outsider's attacks on update reports, against real processes on 127.0.0.1: a graph
# builder, a policy engine on it, and a second policy engine chained behind the first
# (forwarding client queries; reports relayed to the graph builder, as docs/reports-and-brakes.md says to
# chain them), with the report checks relaxed as far as they go (any id that polled once).
#  1. Twenty ids poll the chained engine at 4.13.1 and report failures on edges that do
#     not exist where they say: to a release that does not exist, a downgrade, an edge of
#     another channel.
#  2. Twenty ids poll only at 4.13.2 and report failures on every edge into it.
#  3. Twenty ids that polled at 4.13.1 report a completed update to 4.13.2, then failures
#     on the other edge out of 4.13.1 (a cluster counts on one edge out of a version).
# Then nothing may be braked. Prints each case's answers by HTTP status; exits 1 if a
# brake was made. Usage: tests/attacks/reports.sh [path/to/cincinnati]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${1:-${CINCINNATI_BIN:-$root/build/cincinnati}}"
example="$root/examples/ocp-4x"
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
echo "policy-engines" >"$work/token"

# Starts a service with its ports written to $work/$1.ports; waits for its main port.
start() {
  local name=$1
  shift
  "$bin" "$@" --service.port 0 --status.port 0 --testing.ports_file "$work/$name.ports" >"$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 300); do
    grep -q '^status=' "$work/$name.ports" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$name did not start:" >&2
  cat "$work/$name.log" >&2
  return 1
}
port() { sed -n "s/^$2=//p" "$work/$1.ports"; }
ready() {
  for _ in $(seq 600); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(port "$1" status)$2")" = 200 ] && return 0
    sleep 0.1
  done
  echo "$1 is not ready" >&2
  return 1
}

start gb graph-builder --releases "$example/releases" --graph-data "$example/graph-data" \
  --reports.state_dir "$work/reports" --reports.token_file "$work/token" \
  --brakes.url_base https://updates.example.com/api/upgrades_info/v1/brakes --service.pause_secs 3600
ready gb /readiness
gb="http://127.0.0.1:$(port gb main)"
engine() {
  start "$1" policy-engine --upstream.cincinnati.url "$2" --upstream.cincinnati.cache_ttl_secs 1 \
    --reports.enabled true --reports.upstream_url "$gb/v1/reports" --reports.upstream_token_file "$work/token" \
    --reports.min_poller_age_secs 0 --reports.min_polls 1
  ready "$1" /readyz
}
engine pe1 "$gb/graph"
engine pe2 "http://127.0.0.1:$(port pe1 main)/graph"
pe2="http://127.0.0.1:$(port pe2 main)"

id() { printf '00000000-0000-4000-8000-%012x' "$1"; }
poll() { curl -s -o /dev/null -H 'Accept: application/json' "$pe2/graph?channel=$3&arch=amd64&version=$2&id=$(id "$1")"; }
report() {  # n from to channel attempt [result] -> HTTP status
  local now result="${6:-Failed}" reason='"reason":"ClusterOperatorDegraded",'
  [ "$result" = Failed ] || reason='"reason":"",'
  now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  curl -s -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/json' "$pe2/v1/reports?id=$(id "$1")" \
    -d "{\"clusterID\":\"$(id "$1")\",\"attempt\":\"$5\",\"from\":\"$2\",\"to\":\"$3\",\"arch\":\"amd64\",\"channel\":\"$4\",
         \"result\":\"$result\",\"component\":\"\",$reason\"started\":\"$now\",\"ended\":\"$now\"}"
}
tally() { sort | uniq -c | awk '{printf "%s x HTTP %s  ", $1, $2} END {print ""}'; }

echo "1. edges that do not exist where the reports say (chained engine):"
for n in $(seq 20); do poll "$n" 4.13.1 stable-4.13; done
for case in "4.99.0 stable-4.13 a1" "4.12.3 stable-4.13 b1" "4.13.3 stable-4.13 c1"; do
  read -r to channel attempt <<<"$case"
  printf '   4.13.1 -> %s in %s: ' "$to" "$channel"
  for n in $(seq 20); do report "$n" 4.13.1 "$to" "$channel" "$attempt"; done | tally
done
echo "2. every edge into 4.13.2, from ids that polled only there:"
for n in $(seq 21 40); do poll "$n" 4.13.2 stable-4.13; done
for from in 4.13.1 4.13.0 4.12.4 4.12.3; do
  printf '   %s -> 4.13.2: ' "$from"
  for n in $(seq 21 40); do report "$n" "$from" 4.13.2 stable-4.13 d1; done | tally
done
echo "3. one edge out of 4.13.1 completed, then failures on the other (fast-4.13):"
for n in $(seq 41 60); do poll "$n" 4.13.1 fast-4.13; done
printf '   4.13.1 -> 4.13.2 Completed: '
for n in $(seq 41 60); do report "$n" 4.13.1 4.13.2 fast-4.13 e1 Completed; done | tally
printf '   4.13.1 -> 4.13.3 Failed: '
for n in $(seq 41 60); do report "$n" 4.13.1 4.13.3 fast-4.13 f1; done | tally

brakes="$(curl -s "$gb/v1/brakes")"
echo "brakes: $brakes"
[ "$brakes" = '{"brakes":[]}' ]
