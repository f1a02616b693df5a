#!/usr/bin/env bash
# Serves the same policy-engine answer from `cincinnati serve` and from nginx (static
# file, keep-alive, sendfile) and loads both with wrk under identical settings:
# a ~5 KB and a ~165 KB body, 1 and 64 connections. Prints requests/s, p99 latency and
# our throughput as a ratio of nginx's. A third case, "phased", is per-cluster answers
# of a ~165 KB phased-rollout channel (graph-data 2.x, weekly releases with P2D/P14D
# windows, clock frozen a day after the latest release) with a random cluster id on
# every request, against nginx serving one such answer.
#
#   bash bench/http_vs_nginx.sh [seconds per run, default 10]
#
# Installs wrk and nginx-light if missing. Everything listens on 127.0.0.1 only, and
# every process it starts is stopped on exit.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CINCINNATI_BUILD_DIR:-$root/build}"
duration="${1:-10}"

need=()
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
"$root/scripts/build.sh" >/dev/null

work="$(mktemp -d)"
chmod 755 "$work"  # nginx workers run as another user
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# Inputs: the bundled 4.x example (small answers) and the generated 10,000-release
# graph (large answers), in one graph-builder chain each.
"$build/bench/pipeline_bench" --write-generated "$work/generated"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
  || echo $((20000 + RANDOM % 20000)); }

start_serve() {  # name releases graph-data [extra flags...]; sets serve_port
  local ports="$work/$1.ports"
  "$build/cincinnati" serve --releases "$2" --graph-data "$3" --service.port 0 --status.port 0 \
    --testing.ports_file "$ports" "${@:4}" 2>"$work/$1.log" &
  pids+=($!)
  for _ in $(seq 1 300); do [ -s "$ports" ] && grep -q status= "$ports" && break; sleep 0.1; done
  local main status
  main=$(sed -n 's/^main=//p' "$ports"); status=$(sed -n 's/^status=//p' "$ports")
  for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$status/readyz" >/dev/null && break; sleep 0.1; done
  serve_port=$main
}
# The phased variant of the generated graph-data: eus-4.21 as a managing file.
phased="$work/phased-graph-data"
mkdir -p "$phased/channels"
cp -r "$work/generated/graph-data/blocked-edges" "$work/generated/graph-data/raw" "$phased/"
echo 2.0.0 > "$phased/version"
{
  printf 'channels:\n- name: eus-4.21\n  phasedRollouts:\n  - {fromVersion: patch, duration: P2D}\n  - {fromVersion: minor, duration: P14D}\nversions:\n'
  week=0
  for minor in 20 21; do for patch in $(seq 0 99); do
    printf -- '- {name: 4.%s.%s, start: "%s"}\n' "$minor" "$patch" "$(date -u -d "@$((1600000000 + week * 604800))" +%Y-%m-%dT%H:%M:%SZ)"
    week=$((week + 1))
  done; done
} > "$phased/channels/eus-4.21.yaml"
phased_now=$(date -u -d "@$((1600000000 + 199 * 604800 + 86400))" +%Y-%m-%dT%H:%M:%SZ)

start_serve small "$root/examples/ocp-4x/releases" "$root/examples/ocp-4x/graph-data"; small_port=$serve_port
start_serve large "$work/generated/releases" "$work/generated/graph-data"; large_port=$serve_port
small_url="http://127.0.0.1:$small_port/api/upgrades_info/graph?channel=candidate-4.13&arch=amd64"
large_url="http://127.0.0.1:$large_port/api/upgrades_info/graph?channel=eus-4.21&arch=amd64"
start_serve phased "$work/generated/releases" "$phased" --testing.now "$phased_now"; phased_port=$serve_port
phased_base="http://127.0.0.1:$phased_port/api/upgrades_info/graph?channel=eus-4.21&arch=amd64"
phased_url="$phased_base&id=00000000-0000-4000-8000-000000000000"
cat > "$work/random-id.lua" <<'LUA'
-- A random cluster id (UUID) on every request.
local template = "xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx"
math.randomseed(os.time())
request = function()
  local id = string.gsub(template, "x", function() return string.format("%x", math.random(0, 15)) end)
  local sep = string.find(wrk.path, "?", 1, true) and "&" or "?"
  return wrk.format("GET", wrk.path .. sep .. "id=" .. id)
end
LUA

mkdir -p "$work/www"
curl -sf "$small_url" -o "$work/www/small.json"
curl -sf "$large_url" -o "$work/www/large.json"
curl -sf "$phased_url" -o "$work/www/phased.json"

nginx_port=$(free_port)
workers=$(nproc)
cat > "$work/nginx.conf" <<NGINX
worker_processes $workers;
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
  server {
    listen 127.0.0.1:$nginx_port;
    root $work/www;
  }
}
NGINX
/usr/sbin/nginx -c "$work/nginx.conf" -p "$work" -g 'daemon off;' &
pids+=($!)
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$nginx_port/small.json" >/dev/null && break; sleep 0.1; done

cmp -s "$work/www/small.json" <(curl -sf "http://127.0.0.1:$nginx_port/small.json") || { echo "nginx serves different bytes" >&2; exit 1; }

run_wrk() {  # url connections [wrk flags...] -> "rps p99_ms"
  local threads=$(( $2 < workers ? $2 : workers ))
  local out
  out=$(wrk -t"$threads" -c"$2" -d"${duration}s" --latency "${@:3}" "$1")
  local rps p99
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {v=$2; if (v ~ /us$/) {sub(/us$/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v=v*1000}; printf "%.3f", v}' <<<"$out")
  local errors
  errors=$(awk '/Non-2xx|Socket errors/ {print}' <<<"$out")
  [ -z "$errors" ] || echo "  wrk reported: $errors" >&2
  echo "$rps $p99"
}

printf '%-8s %6s %6s | %12s %9s | %12s %9s | %6s\n' body bytes conns "cincinnati" "p99 ms" "nginx" "p99 ms" ratio
for body in small large phased; do
  url_var="${body}_url"; ours="${!url_var}"
  extra=()
  if [ "$body" = phased ]; then ours="$phased_base"; extra=(-s "$work/random-id.lua"); fi
  theirs="http://127.0.0.1:$nginx_port/$body.json"
  bytes=$(wc -c < "$work/www/$body.json")
  for conns in 1 64; do
    read -r our_rps our_p99 <<<"$(run_wrk "$ours" "$conns" "${extra[@]}")"
    read -r ngx_rps ngx_p99 <<<"$(run_wrk "$theirs" "$conns" "${extra[@]}")"
    ratio=$(awk -v a="$our_rps" -v b="$ngx_rps" 'BEGIN {printf "%.2f", a / b}')
    printf '%-8s %6s %6s | %12s %9s | %12s %9s | %6s\n' "$body" "$bytes" "$conns" "$our_rps" "$our_p99" "$ngx_rps" "$ngx_p99" "$ratio"
  done
done
