#!/usr/bin/env bash
# Latency at a fixed rate below saturation, where users live: ours and nginx's
# p50/p99/p99.9 on the same bytes at 50 % and 80 % of nginx's saturation rate.
#
# The input is OpenShift's graph of November 2021 as graph-data 2.0.0 (bench/phased_2021.py
# and bench/real_releases.py over the shared fixture, as bench/http_vs_nginx.sh's
# "percluster" case), the clock frozen at 2021-11-26T00:00:00Z, served by one
# `cincinnati serve` with channel-target views for every channel and a 1 GiB view cache.
# Three kinds of answer, each with `Accept-Encoding: gzip` as the CVO sends:
#  * cached: stable-4.8's answer with no cluster id, the same request every time;
#  * percluster: stable-4.8 with a fresh random cluster id on every request (its edges
#    in their rollout windows depend on the id); nginx serves 1,000 such answers (our
#    gzip bytes, gzip_static) picked at random;
#  * channeltarget: a random channel x release of the graph as `version` (10,991 keys,
#    every one asked once before, so the cache is warm) and a random id; nginx serves
#    every key's answer as a file, picked at random the same way.
# For each kind: nginx's saturation rate (h2load, 64 connections, no rate), then at 50 %
# and 80 % of it, alternating ours and nginx's runs, h2load --rps with 64 connections
# (HTTP/1.1, keep-alive, one request at a time per connection) and its per-request log.
# The percentiles come from that log: each request's time from its send to its last
# byte. (h2load sends a request that is due as soon as its connection is free, so a
# stall shows as the stalled requests' times, not as every request queued behind them.)
# The servers run on the CPUs in LATENCY_SERVER_CPUS (default 0), the client on
# LATENCY_CLIENT_CPUS (default 1): nginx with one worker per server CPU, ours with one
# I/O thread per server CPU (what it finds in its affinity mask).
#
#   bash bench/latency_at_rate.sh [seconds per run, default 10] [all|cached|percluster|channeltarget] [runs, default 3]
#
# Each (kind, rate) prints one row per run and a "med" row of the medians.
# CINCINNATI_BIN=/path/to/cincinnati serves with that binary (no build);
# CINCINNATI_PHASED_2021=DIR takes the tree from DIR/graph-data and DIR/releases.
# Needs h2load (nghttp2-client), nginx with gzip_static (nginx-light) and taskset;
# installs the first two if missing. Everything listens on 127.0.0.1 only, and every
# process it starts is stopped on exit.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CINCINNATI_BUILD_DIR:-$root/build}"
bin="${CINCINNATI_BIN:-$build/cincinnati}"
duration="${1:-10}"
cases="${2:-all}"
runs="${3:-3}"
server_cpus="${LATENCY_SERVER_CPUS:-0}"
client_cpus="${LATENCY_CLIENT_CPUS:-1}"
connections=64
# LATENCY_REALTIME=1 runs servers and client under SCHED_FIFO (chrt, root): on a machine
# that also builds, the measurement then preempts the build instead of waiting for it.
rt=""; [ "${LATENCY_REALTIME:-0}" = 1 ] && rt="chrt -f 20"
want() { [ "$cases" = all ] || [ "$cases" = "$1" ]; }

need=()
command -v h2load >/dev/null || need+=(nghttp2-client)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
[ -n "${CINCINNATI_BIN:-}" ] || "$root/scripts/build.sh" >/dev/null
[ -x "$bin" ] || { echo "no cincinnati binary at $bin" >&2; exit 1; }

work="$(mktemp -d)"
chmod 755 "$work"  # nginx workers run as another user
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

fixture="$root/../shared/fixtures/graph-data-134475077ed4eeaedf3c339f12915b9cdaf7d194"
if [ -n "${CINCINNATI_PHASED_2021:-}" ]; then
  data="$CINCINNATI_PHASED_2021/graph-data" releases="$CINCINNATI_PHASED_2021/releases"
else
  data="$work/graph-data" releases="$work/releases"
  python3 "$root/bench/phased_2021.py" "$fixture" "$data" >/dev/null
  python3 "$root/bench/real_releases.py" "$data" "$releases" >/dev/null
fi

# Ours, pinned to the server CPUs.
ports="$work/serve.ports"
$rt taskset -c "$server_cpus" "$bin" serve --releases "$releases" --graph-data "$data" \
  --testing.now 2021-11-26T00:00:00Z --views.channel_targets '*' --views.max_cached_bytes 1073741824 \
  --service.port 0 --status.port 0 --testing.ports_file "$ports" 2>"$work/serve.log" &
pids+=($!); serve_pid=$!
for _ in $(seq 1 600); do [ -s "$ports" ] && grep -q status= "$ports" && break; sleep 0.1; done
status_port=$(sed -n 's/^status=//p' "$ports")
for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$status_port/readyz" >/dev/null && break; sleep 0.1; done
ours="http://127.0.0.1:$(sed -n 's/^main=//p' "$ports")"
graph="/api/upgrades_info/graph"

# The answers, fetched from ours plain and gzip: nginx's files (gzip_static sends the
# .gz as it is, once it is known to decompress to the plain file), and our warm-up.
fetch() {  # curl-config: every url plain, then gzip to the same output plus .gz
  curl -sf -K "$1" || { echo "an answer failed" >&2; exit 1; }
  sed 's/\.json"$/.json.gz"/' "$1" > "$1.gz"
  curl -sf -H 'Accept-Encoding: gzip' -K "$1.gz" || { echo "a gzip answer failed" >&2; exit 1; }
}
mkdir -p "$work/www"
python3 - "$work" "$ours$graph" "$ours/api/upgrades_info/v1/ui/channels" <<'PY'
# cached.curl, percluster.curl, ct.curl (the files), and the keys and ids behind them.
import json, os, random, sys, urllib.request, uuid
work, base, listing = sys.argv[1:]
www = work + "/www"
rnd = random.Random(2021)
ids = [str(uuid.UUID(int=rnd.getrandbits(128), version=4)) for _ in range(1000)]
def entry(url, path):
    return 'url = "%s"\noutput = "%s/%s"\n' % (url, www, path)
open(work + "/cached.curl", "w").write(entry(base + "?channel=stable-4.8&arch=amd64", "cached.json"))
os.makedirs(www + "/percluster", exist_ok=True)
open(work + "/percluster.curl", "w").write("".join(
    entry(base + "?channel=stable-4.8&arch=amd64&id=" + i, "percluster/%s.json" % i) for i in ids))
open(work + "/percluster.ids", "w").write("\n".join(ids) + "\n")
channels = json.load(urllib.request.urlopen(listing))["channels"]
versions = set()
for c in channels:
    doc = json.load(urllib.request.urlopen(base + "?channel=%s&arch=amd64" % c))
    versions |= {n["version"] for n in doc["nodes"]}
keys = [(c, v) for c in channels for v in sorted(versions)]
for c in channels:
    os.makedirs("%s/ct/%s" % (www, c), exist_ok=True)
open(work + "/ct.curl", "w").write("".join(
    entry(base + "?channel=%s&arch=amd64&version=%s&id=%s" % (c, v, ids[0]), "ct/%s/%s.json" % (c, v)) for c, v in keys))
open(work + "/ct.keys", "w").write("".join("%s %s\n" % k for k in keys))
PY
want cached && fetch "$work/cached.curl"
want percluster && fetch "$work/percluster.curl"
if want channeltarget; then
  warm=$(date +%s.%N)
  fetch "$work/ct.curl"
  echo "channeltarget: $(wc -l < "$work/ct.keys") keys fetched plain and gzip in $(awk -v a="$warm" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"
fi
python3 - "$work/www" <<'PY'
import gzip, pathlib, sys
for gz in pathlib.Path(sys.argv[1]).rglob("*.json.gz"):
    if gzip.decompress(gz.read_bytes()) != gz.with_suffix("").read_bytes():
        sys.exit("%s: our gzip body does not decompress to the plain answer" % gz)
PY

# nginx, pinned to the same CPUs, one worker per CPU.
nginx_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/nginx.conf" <<NGINX
worker_processes $(taskset -c "$server_cpus" nproc);
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 10s;
  keepalive_requests 1000000;
  default_type application/json;
  gzip_static on;
  server { listen 127.0.0.1:$nginx_port; root $work/www; }
}
NGINX
$rt taskset -c "$server_cpus" /usr/sbin/nginx -c "$work/nginx.conf" -p "$work" -g 'daemon off;' &
pids+=($!)
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$nginx_port/" && break; sleep 0.1; done
theirs="http://127.0.0.1:$nginx_port"

# h2load's inputs: one URI per line, each connection going through the list in order.
# Ours get a fresh random id per line; 200,000 lines outlast a run at these rates' share
# of one connection.
python3 - "$work" "$ours$graph" "$theirs" <<'PY'
import random, sys, uuid
work, ours, theirs = sys.argv[1:]
rnd = random.Random(7)
n = 200000
def fresh():
    return str(uuid.UUID(int=rnd.getrandbits(128), version=4))
ids = open(work + "/percluster.ids").read().split()
keys = [line.split() for line in open(work + "/ct.keys")]
with open(work + "/cached-ours.uris", "w") as f:
    f.write((ours + "?channel=stable-4.8&arch=amd64\n") * 1000)
with open(work + "/cached-nginx.uris", "w") as f:
    f.write((theirs + "/cached.json\n") * 1000)
with open(work + "/percluster-ours.uris", "w") as f:
    f.writelines("%s?channel=stable-4.8&arch=amd64&id=%s\n" % (ours, fresh()) for _ in range(n))
with open(work + "/percluster-nginx.uris", "w") as f:
    f.writelines("%s/percluster/%s.json\n" % (theirs, rnd.choice(ids)) for _ in range(n))
with open(work + "/channeltarget-ours.uris", "w") as f:
    for _ in range(n):
        c, v = rnd.choice(keys)
        f.write("%s?channel=%s&arch=amd64&version=%s&id=%s\n" % (ours, c, v, fresh()))
with open(work + "/channeltarget-nginx.uris", "w") as f:
    for _ in range(n):
        c, v = rnd.choice(keys)
        f.write("%s/ct/%s/%s.json\n" % (theirs, c, v))
PY

load() {  # uris [h2load flags...] -> h2load's output; the per-request log in $work/log
  rm -f "$work/log"
  $rt taskset -c "$client_cpus" h2load --h1 -t 1 -c "$connections" -D "$duration" --warm-up-time 1 \
    -H 'Accept-Encoding: gzip' -i "$1" --log-file "$work/log" "${@:2}" 2>&1
}
saturation() {  # uris -> req/s
  load "$1" | awk '/^finished in/ {for (i = 1; i <= NF; i++) if ($i ~ /req\/s/) {v = $(i - 1); gsub(/,/, "", v); print v}}'
}
percentiles() {  # -> "achieved_rps p50 p99 p99.9 failed" from $work/log (ms)
  python3 - "$work/log" "$duration" <<'PY'
import sys
rows = [line.split("\t") for line in open(sys.argv[1]) if line.strip()]
ok = sorted(int(r[2]) for r in rows if r[1] == "200")
failed = len(rows) - len(ok)
def q(p):
    return ok[min(len(ok) - 1, int(p * len(ok)))] / 1000 if ok else float("nan")
print("%.0f %.3f %.3f %.3f %d" % (len(rows) / float(sys.argv[2]), q(0.5), q(0.99), q(0.999), failed))
PY
}
median() { sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "servers on CPUs $server_cpus, h2load on CPUs $client_cpus; $connections connections, $duration s per run, gzip"
printf '%-22s %8s | %8s %7s %7s %7s | %8s %7s %7s %7s\n' kind "rate" "ours r/s" p50 p99 p99.9 "nginx" p50 p99 p99.9
for kind in cached percluster channeltarget; do
  want "$kind" || continue
  sat=$(saturation "$work/$kind-nginx.uris")
  ours_sat=$(saturation "$work/$kind-ours.uris")
  echo "$kind: saturation nginx $sat req/s, ours $ours_sat req/s"
  for share in 50 80; do
    rate=$(awk -v s="$sat" -v p="$share" 'BEGIN {printf "%.0f", s * p / 100}')
    per_connection=$(awk -v r="$rate" -v c="$connections" 'BEGIN {printf "%.0f", r / c}')
    rows=()
    for r in $(seq 1 "$runs"); do
      load "$work/$kind-ours.uris" --rps "$per_connection" >/dev/null; read -r o_rps o50 o99 o999 o_failed <<<"$(percentiles)"
      load "$work/$kind-nginx.uris" --rps "$per_connection" >/dev/null; read -r n_rps n50 n99 n999 n_failed <<<"$(percentiles)"
      [ "$o_failed$n_failed" = 00 ] || echo "  failed requests: ours $o_failed, nginx $n_failed" >&2
      printf '%-22s %8s | %8s %7s %7s %7s | %8s %7s %7s %7s\n' "$kind $share% #$r" "$rate" "$o_rps" "$o50" "$o99" "$o999" "$n_rps" "$n50" "$n99" "$n999"
      rows+=("$o_rps $o50 $o99 $o999 $n_rps $n50 $n99 $n999")
    done
    med=()
    for col in 1 2 3 4 5 6 7 8; do med+=("$(printf '%s\n' "${rows[@]}" | awk -v c="$col" '{print $c}' | median)"); done
    printf '%-22s %8s | %8s %7s %7s %7s | %8s %7s %7s %7s\n' "$kind $share% med" "$rate" "${med[@]}"
  done
done
echo "our RSS at the end: $(awk '/^VmRSS/ {print $2, $3}' "/proc/$serve_pid/status")"
