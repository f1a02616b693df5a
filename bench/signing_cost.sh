#!/usr/bin/env bash
# The cost of signed answers: `cincinnati serve` with and without
# --signing.keys on the same inputs, loaded the same way, in the same run, runs
# alternating. The input is the hardest real case for the signature cache: per-cluster
# answers of a real-size phased channel (stable-4.8 in OpenShift's graph of November
# 2021 as graph-data 2.0.0, the clock frozen at 2021-11-26T00:00:00Z; bench/phased_2021.py
# and bench/real_releases.py, as bench/http_vs_nginx.sh's "percluster" case), a fresh
# random cluster id on every request, `Accept-Encoding: gzip` as the CVO sends, 64
# connections. Prints requests/s per run and the server's CPU time per request (user +
# system, from /proc: the steadier figure on a machine that also runs wrk), their
# medians, and the median of each run's signed/unsigned ratio (the two runs of a pair
# are adjacent in time, so the ratio holds when the machine changes speed between pairs).
# SIGNING_COST_CONTROL=1 starts the second service unsigned too: the same comparison
# between two identical services shows the noise of the measurement.
#   bash bench/signing_cost.sh [seconds per run, default 10] [runs of each, default 3]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CINCINNATI_BUILD_DIR:-$root/build}"
bin="${CINCINNATI_BIN:-$build/cincinnati}"
duration="${1:-10}"
runs="${2:-3}"
command -v wrk >/dev/null || { echo "signing_cost.sh: needs wrk (apt-get install wrk)" >&2; exit 2; }
[ -n "${CINCINNATI_BIN:-}" ] || "$root/scripts/build.sh" >/dev/null
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

fixture="$root/../shared/fixtures/graph-data-134475077ed4eeaedf3c339f12915b9cdaf7d194"
python3 "$root/bench/phased_2021.py" "$fixture" "$work/graph-data" >/dev/null
python3 "$root/bench/real_releases.py" "$work/graph-data" "$work/releases" >/dev/null
openssl genpkey -algorithm ed25519 -out "$work/signing.key" 2>/dev/null

start_serve() {  # name [extra flags...]; sets port
  local ports="$work/$1.ports"
  "$bin" serve --releases "$work/releases" --graph-data "$work/graph-data" --testing.now 2021-11-26T00:00:00Z \
    --service.port 0 --status.port 0 --testing.ports_file "$ports" "${@:2}" 2>"$work/$1.log" &
  pids+=($!)
  for _ in $(seq 1 600); do [ -s "$ports" ] && grep -q status= "$ports" && break; sleep 0.1; done
  local status; status=$(sed -n 's/^status=//p' "$ports")
  for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$status/readyz" >/dev/null && break; sleep 0.1; done
  port=$(sed -n 's/^main=//p' "$ports")
}
start_serve unsigned; unsigned_port=$port; unsigned_pid=${pids[-1]}
if [ "${SIGNING_COST_CONTROL:-0}" = 1 ]; then
  start_serve signed --signing.state_dir "$work/signing"; signed_port=$port; signed_pid=${pids[-1]}
else
  start_serve signed --signing.keys "$work/signing.key" --signing.state_dir "$work/signing"; signed_port=$port; signed_pid=${pids[-1]}
fi
path="/api/upgrades_info/graph?channel=stable-4.8&arch=amd64"
curl -sf -D "$work/headers" -o /dev/null -H 'Accept-Encoding: gzip' "http://127.0.0.1:$signed_port$path&id=00000000-0000-4000-8000-000000000001"
if [ "${SIGNING_COST_CONTROL:-0}" != 1 ]; then
  grep -qi '^Cincinnati-Signature: v=1;' "$work/headers" || { echo "signing_cost.sh: the signed service sent no signature" >&2; exit 1; }
fi

cat > "$work/random-id.lua" <<'LUA'
-- A random cluster id on every request, from 65,536 drawn per thread at start.
local template = "xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx"
local threads, ids = 0, {}
function setup(thread) threads = threads + 1; thread:set("number", threads) end
function init(args)
  math.randomseed(os.time() * 1000 + (number or 0))
  for i = 1, 65536 do ids[i] = string.gsub(template, "x", function() return string.format("%x", math.random(0, 15)) end) end
end
request = function() return wrk.format("GET", wrk.path .. "&id=" .. ids[math.random(1, #ids)]) end
LUA
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# "req/s us/request" of one run against port $1 served by process $2.
rps() {
  local before after out
  before=$(ticks "$2")
  out=$(wrk -t2 -c64 -d"${duration}s" -s "$work/random-id.lua" -H 'Accept-Encoding: gzip' "http://127.0.0.1:$1$path")
  after=$(ticks "$2")
  awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" '/requests in/ {n = $1} /Requests\/sec/ {r = int($2)}
    END {printf "%d %.2f\n", r, t * 1e6 / hz / n}' <<<"$out"
}
# A warm-up of each: every distinct answer of the span assembled (and signed) once.
wrk -t2 -c64 -d2s -s "$work/random-id.lua" -H 'Accept-Encoding: gzip' "http://127.0.0.1:$unsigned_port$path" >/dev/null
wrk -t2 -c64 -d2s -s "$work/random-id.lua" -H 'Accept-Encoding: gzip' "http://127.0.0.1:$signed_port$path" >/dev/null
unsigned=(); signed=(); unsigned_us=(); signed_us=(); ratio=(); ratio_us=()
for i in $(seq 1 "$runs"); do  # the order alternates, so that neither always runs first
  if [ $((i % 2)) = 1 ]; then
    read -r u uu <<<"$(rps "$unsigned_port" "$unsigned_pid")"; read -r s su <<<"$(rps "$signed_port" "$signed_pid")"
  else
    read -r s su <<<"$(rps "$signed_port" "$signed_pid")"; read -r u uu <<<"$(rps "$unsigned_port" "$unsigned_pid")"
  fi
  unsigned+=("$u"); signed+=("$s"); unsigned_us+=("$uu"); signed_us+=("$su")
  ratio+=("$(awk -v s="$s" -v u="$u" 'BEGIN {printf "%.3f", s/u}')"); ratio_us+=("$(awk -v s="$su" -v u="$uu" 'BEGIN {printf "%.3f", s/u}')")
  echo "run $i: unsigned $u req/s ($uu us/request), signed $s req/s ($su us/request): ${ratio[-1]} req/s, ${ratio_us[-1]} CPU"
done
status=$(sed -n 's/^status=//p' "$work/signed.ports")
echo "signatures made by the signed service: $(curl -sf "http://127.0.0.1:$status/metrics" | awk '/^cincinnati_pe_answer_signatures_made/ {print $2}')"
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mu=$(median "${unsigned[@]}"); ms=$(median "${signed[@]}")
muu=$(median "${unsigned_us[@]}"); msu=$(median "${signed_us[@]}")
echo "median: unsigned $mu req/s, signed $ms req/s, signed/unsigned $(awk -v s="$ms" -v u="$mu" 'BEGIN {printf "%.3f", s/u}')"
echo "median server CPU: unsigned $muu us/request, signed $msu us/request, signed/unsigned $(awk -v s="$msu" -v u="$muu" 'BEGIN {printf "%.3f", s/u}')"
echo "median of the runs' ratios: signed/unsigned $(median "${ratio[@]}") req/s, $(median "${ratio_us[@]}") server CPU per request"
