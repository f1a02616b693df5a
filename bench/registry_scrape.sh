#!/usr/bin/env bash
# Scrape benchmark: N releases (default 1,000) published into a local docker-registry,
# then scraped by the graph builder three ways, timed by its own metrics:
#   cold    - first scrape of a fresh process (every manifest, config and layer fetched)
#   warm    - later scrapes of the same process (tags and manifests only; cache hits)
#   restart - first scrape of a new process with the on-disk cache of the first
#
#   bash bench/registry_scrape.sh [N]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CINCINNATI_BUILD_DIR:-$root/build}"
count="${1:-1000}"
"$root/scripts/build.sh" >/dev/null
bin="$build/cincinnati"

work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/registry.yml" <<YAML
version: 0.1
log: {level: error}
storage: {filesystem: {rootdirectory: $work/data}}
http: {addr: 127.0.0.1:$port}
YAML
docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/v2/" >/dev/null && break; sleep 0.1; done

echo "publishing $count releases..."
start=$(date +%s.%N)
for i in $(seq 0 $((count - 1))); do
  minor=$((i / 100)); patch=$((i % 100))
  prev=""
  for p in $(seq $((patch > 10 ? patch - 10 : 0)) $((patch - 1))); do prev="$prev${prev:+,}4.$minor.$p"; done
  "$bin" release new --version "4.$minor.$patch" ${prev:+--previous "$prev"} \
    --metadata "url=https://access.redhat.com/errata/RHBA-2024:$i" \
    --to "http://127.0.0.1:$port/bench/release:4.$minor.$patch" >/dev/null
done
echo "published in $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}') s"

metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }

run_builder() {  # name -> sets status_port
  "$bin" graph-builder --upstream.registry.url "http://127.0.0.1:$port" --upstream.registry.repository bench/release \
    --upstream.registry.cache_directory "$work/cache" --graph-data "$root/examples/ocp-4x/graph-data" \
    --service.pause_secs 1 --service.port 0 --service.public_port 0 --status.port 0 \
    --testing.ports_file "$work/$1.ports" 2>"$work/$1.log" &
  pids+=($!)
  for _ in $(seq 1 600); do grep -q status= "$work/$1.ports" 2>/dev/null && break; sleep 0.1; done
  status_port=$(sed -n 's/^status=//p' "$work/$1.ports")
  for _ in $(seq 1 1200); do curl -sf "http://127.0.0.1:$status_port/readiness" >/dev/null && break; sleep 0.1; done
}

run_builder cold
cold=$(metric "$status_port" cincinnati_gb_graph_initial_upstream_scrape_duration)
for _ in $(seq 1 600); do
  n=$(metric "$status_port" cincinnati_gb_graph_upstream_scrapes_duration_count); [ "${n:-0}" -ge 3 ] && break; sleep 0.2
done
warm_sum=$(metric "$status_port" cincinnati_gb_graph_upstream_scrapes_duration_sum)
warm_n=$(metric "$status_port" cincinnati_gb_graph_upstream_scrapes_duration_count)
nodes=$(metric "$status_port" cincinnati_gb_graph_final_releases)
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true

run_builder restart
restart=$(metric "$status_port" cincinnati_gb_graph_initial_upstream_scrape_duration)

printf '%-8s %10s\n' scrape seconds
printf '%-8s %10.3f\n' cold "$cold" warm "$(awk -v s="$warm_sum" -v n="$warm_n" 'BEGIN {print s / n}')" restart "$restart"
echo "($count releases, $nodes nodes; warm = mean of $warm_n scrapes; fetch_concurrency 16)"
