#!/usr/bin/env bash
# Load and soak: wrk against a policy engine (with the embedded cluster directory) in
# front of a graph builder, for a given time, with a mix of requests:
#   60 % valid views      channel x arch of the 4.x example, with and without version
#   20 % per-cluster      id= one of the example's clusters (hotfix lookups) or one of a
#                         fleet of 10,000 clusters the directory does not know
#   20 % invalid          bad channel, bad arch, missing channel: each must be a 400
# Meanwhile the graph builder refreshes every 2 s from a graph-data tree that a loop
# switches every 3 s between two valid revisions (an atomic rename of a symlink), so
# the policy engine keeps taking new graphs under load.
#
#   bash bench/soak.sh [minutes, default 10] [connections, default 64]
#
# Prints throughput, p50/p99 latency, responses by status, socket errors, and the RSS
# and open file descriptors of both services after warm-up and at the end; exits
# non-zero unless: every response is a 200 or an intended 400, no socket errors, RSS
# growth under 5 %, no fd growth. Everything listens on 127.0.0.1 only and every
# process it starts is stopped on exit. Installs wrk if missing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CINCINNATI_BUILD_DIR:-$root/build}"
minutes="${1:-10}"
connections="${2:-64}"

if ! command -v wrk >/dev/null; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends wrk >/dev/null
fi
"$root/scripts/build.sh" >/dev/null

work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
example="$root/examples/ocp-4x"

# Two revisions of the graph-data: B drops 4.12.0 from stable-4.12 and blocks
# 4.12.1 -> 4.12.2; both are valid.
cp -r "$example/graph-data" "$work/rev-a"
cp -r "$example/graph-data" "$work/rev-b"
printf 'name: stable-4.12\nversions:\n- 4.12.1\n- 4.12.2\n- 4.12.3\n- 4.12.4\n' > "$work/rev-b/channels/stable-4.12.yaml"
printf 'to: 4.12.2\nfrom: 4[.]12[.]1[+].*\n' > "$work/rev-b/blocked-edges/4.12.2.yaml"
ln -s "$work/rev-a" "$work/gd"
(
  rev=b
  while true; do
    sleep 3
    ln -s "$work/rev-$rev" "$work/gd.next" && mv -T "$work/gd.next" "$work/gd"
    if [ "$rev" = b ]; then rev=a; else rev=b; fi
  done
) &
pids+=($!)

"$build/cincinnati" clusters import --replace --db "$work/clusters.db" "$example/clusters.csv" >/dev/null

wait_ports() {  # ports-file -> "main status" once written
  for _ in $(seq 1 300); do [ -s "$1" ] && grep -q status= "$1" && break; sleep 0.1; done
  echo "$(sed -n 's/^main=//p' "$1") $(sed -n 's/^status=//p' "$1")"
}
"$build/cincinnati" graph-builder -v --releases "$example/releases" --graph-data "$work/gd" --service.pause_secs 2 \
  --service.port 0 --status.port 0 --service.public_port 0 --testing.ports_file "$work/gb.ports" 2>"$work/gb.log" &
gb_pid=$!; pids+=($gb_pid)
read -r gb_port gb_status < <(wait_ports "$work/gb.ports")
"$build/cincinnati" policy-engine -v --upstream.cincinnati.url "http://127.0.0.1:$gb_port/graph" \
  --upstream.cincinnati.cache_ttl_secs 2 --cluster_directory.path "$work/clusters.db" \
  --service.path_prefix /api/upgrades_info --service.port 0 --status.port 0 \
  --testing.ports_file "$work/pe.ports" 2>"$work/pe.log" &
pe_pid=$!; pids+=($pe_pid)
read -r pe_port pe_status < <(wait_ports "$work/pe.ports")
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$pe_status/readyz" >/dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$pe_port/api/upgrades_info/graph?channel=stable-4.12" >/dev/null

cat > "$work/mix.lua" <<'LUA'
local channels = {"stable-4.12", "fast-4.12", "candidate-4.12", "stable-4.13", "fast-4.13", "candidate-4.13"}
local versions = {"4.12.0", "4.12.3", "4.13.0", "4.13.1"}
local clusters = {"0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60", "7c9e6679-7425-40de-944b-e07fc1f90ae7",
                  "f47ac10b-58cc-4372-a567-0e02b2c3d479"}
local invalid = {"channel=Not_A_Channel", "channel=stable-4.12&arch=AMD-64", "arch=amd64", "channel=%zz",
                 "channel=stable-4.12%ff"}
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) statuses = {} end
local function pick(t) return t[math.random(#t)] end
function request()
  local r = math.random(100)
  local q
  if r <= 60 then
    q = "channel=" .. pick(channels) .. "&arch=amd64"
    if r <= 30 then q = q .. "&version=" .. pick(versions) end
  elseif r <= 80 then
    -- a fleet: the three known clusters, or one of 10,000 others the directory does not know
    local id = (r <= 72) and pick(clusters) or string.format("%08x-0000-4000-8000-000000000000", math.random(10000))
    q = "channel=" .. pick({"stable-4.13", "fast-4.13"}) .. "&arch=amd64&id=" .. id
  else
    q = pick(invalid)
  end
  return wrk.format("GET", "/api/upgrades_info/graph?" .. q)
end
function response(status, headers, body) statuses[status] = (statuses[status] or 0) + 1 end
function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    for s, n in pairs(t:get("statuses")) do total[s] = (total[s] or 0) + n end
  end
  for s, n in pairs(total) do io.write(string.format("status %d %d\n", s, n)) end
  io.write(string.format("p50_ms %.3f\np99_ms %.3f\n", latency:percentile(50) / 1000, latency:percentile(99) / 1000))
  io.write(string.format("socket_errors %d\n", summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
  io.write(string.format("non2xx3xx %d\n", summary.errors.status))
end
LUA

sample() {  # pid -> "rss_kb fds"
  echo "$(awk '/^VmRSS/ {print $2}' "/proc/$1/status") $(ls "/proc/$1/fd" | wc -l)"
}
# Warm-up (SOAK_WARMUP_SECS, default 60) of the same mix so caches and pools reach their steady size.
wrk -t2 -c"$connections" -d"${SOAK_WARMUP_SECS:-60}s" -s "$work/mix.lua" "http://127.0.0.1:$pe_port" >/dev/null
read -r gb_rss0 gb_fd0 < <(sample $gb_pid)
read -r pe_rss0 pe_fd0 < <(sample $pe_pid)
refreshes0=$(grep -c "graph refreshed" "$work/gb.log" || true)
taken0=$(grep -c "answers precomputed" "$work/pe.log" || true)
echo "soak: ${minutes} min, ${connections} connections, 2 threads; graph-data switching every 3 s"
# RSS of the policy engine every minute: a plateau or a slope.
( while true; do sleep 60; read -r r _ < <(sample $pe_pid); printf '%s ' "$r" >> "$work/rss.txt"; done ) &
sampler=$!; pids+=($sampler)
wrk -t2 -c"$connections" -d"${minutes}m" --timeout 5s --latency -s "$work/mix.lua" "http://127.0.0.1:$pe_port" > "$work/wrk.txt"
kill $sampler 2>/dev/null || true
sleep 3  # let the last connections close
read -r gb_rss1 gb_fd1 < <(sample $gb_pid)
read -r pe_rss1 pe_fd1 < <(sample $pe_pid)
refreshes=$(( $(grep -c "graph refreshed" "$work/gb.log" || true) - refreshes0 ))
taken=$(( $(grep -c "answers precomputed" "$work/pe.log" || true) - taken0 ))

rps=$(awk '/^Requests\/sec/ {print $2}' "$work/wrk.txt")
total=$(awk '/requests in/ {print $1}' "$work/wrk.txt")
p50=$(awk '/^p50_ms/ {print $2}' "$work/wrk.txt"); p99=$(awk '/^p99_ms/ {print $2}' "$work/wrk.txt")
socket_errors=$(awk '/^socket_errors/ {print $2}' "$work/wrk.txt")
ok=$(awk '$1=="status" && $2==200 {print $3}' "$work/wrk.txt"); ok=${ok:-0}
bad=$(awk '$1=="status" && $2==400 {print $3}' "$work/wrk.txt"); bad=${bad:-0}
other=$(awk '$1=="status" && $2!=200 && $2!=400 {n+=$3} END {print n+0}' "$work/wrk.txt")
growth() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b - a) * 100 / a}'; }

echo "requests        $total ($rps req/s)"
echo "latency         p50 ${p50} ms, p99 ${p99} ms"
echo "responses       200: $ok, 400 (intended): $bad, other: $other; socket errors: $socket_errors"
echo "graph refreshes $refreshes by the graph builder, $taken new graphs taken by the policy engine"
echo "graph builder   RSS ${gb_rss0} -> ${gb_rss1} KB ($(growth "$gb_rss0" "$gb_rss1") %), fds $gb_fd0 -> $gb_fd1"
echo "policy engine   RSS ${pe_rss0} -> ${pe_rss1} KB ($(growth "$pe_rss0" "$pe_rss1") %), fds $pe_fd0 -> $pe_fd1"
echo "policy engine   RSS each minute (KB): $(cat "$work/rss.txt" 2>/dev/null)"
pass=1
[ "$other" -eq 0 ] && [ "$socket_errors" -eq 0 ] && [ "$taken" -gt 0 ] || pass=0
[ "$pe_fd1" -le "$pe_fd0" ] && [ "$gb_fd1" -le "$gb_fd0" ] || pass=0
awk -v a="$pe_rss0" -v b="$pe_rss1" -v c="$gb_rss0" -v d="$gb_rss1" 'BEGIN {exit !((b - a) < 0.05 * a && (d - c) < 0.05 * c)}' || pass=0
errors_logged=$(cat "$work/gb.log" "$work/pe.log" | grep -c "\[error\]" || true)
echo "errors logged   $errors_logged"
if [ "$pass" -eq 1 ]; then echo "soak: PASS"; else echo "soak: FAIL"; exit 1; fi
