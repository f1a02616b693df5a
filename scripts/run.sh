#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs the update service on the
# bundled 4.x example: graph builder and policy engine in one process
# (`cincinnati serve`), on 127.0.0.1:8081 with the reference's /api/upgrades_info
# prefix, and its graph page at http://127.0.0.1:8081/. Stop it with Ctrl-C. Extra
# arguments go to `cincinnati serve` (the banner follows the ports they set).
# CINCINNATI_BIN=PATH runs that binary instead of building build/cincinnati.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CINCINNATI_BUILD_DIR:-$root/build}"
if [ -n "${CINCINNATI_BIN:-}" ]; then  # that binary instead of building build/cincinnati
  # Beside nothing of the checkout's: one file under /tmp, replaced on every run.
  bin="$CINCINNATI_BIN" clusters="${TMPDIR:-/tmp}/cincinnati-example-clusters-$(id -u).db"
else
  "$root/scripts/build.sh" cincinnati >/dev/null  # only what it runs
  bin="$build/cincinnati" clusters="$build/example-clusters.db"
fi

example="$root/examples/ocp-4x"
# The addresses the banner names follow the arguments (--service.port 9000 or
# --service.port=9000, the same for --status.port, the addresses and the path prefix).
address=127.0.0.1 port=8081 status_address=127.0.0.1 status_port=9081 prefix=/api/upgrades_info settings=""
args=("$@")
for ((i = 0; i < ${#args[@]}; ++i)); do
  arg="${args[$i]}" value="${args[$((i + 1))]:-}"
  case "$arg" in *=*) value="${arg#*=}" arg="${arg%%=*}" ;; esac
  case "$arg" in
    --service.address) address="$value" ;;
    --service.port) port="$value" ;;
    --status.address) status_address="$value" ;;
    --status.port) status_port="$value" ;;
    --service.path_prefix) prefix="$value" ;;
    --config|-c) settings="$value" ;;
  esac
done
url="http://$address:$port$prefix/graph"
# Busy ports are said before anything else, every one of them, with the flags that
# choose others.
busy=0
for spec in "$address:$port:the service:--service.port" "$status_address:$status_port:its status routes:--status.port"; do
  IFS=: read -r host p what flag <<<"$spec"
  if ! python3 -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))' "$host" "$p" 2>/dev/null; then
    echo "error: port $p on $host (for $what) is taken; choose another with $flag, e.g. scripts/run.sh $flag 1$p" >&2
    busy=1
  fi
done
[ "$busy" = 0 ] || exit 1
# The example's cluster directory (who owns which cluster), rebuilt from its CSV.
"$bin" clusters import --replace --db "$clusters" "$example/clusters.csv" 2>/dev/null
cat <<TEXT
Cincinnati update service on the bundled example ($example)
  graph page: http://$address:$port/   (in a browser: channels, releases, paths, risks)
  graph API:  $url?channel=stable-4.13
  status:     http://$status_address:$status_port/readyz   http://$status_address:$status_port/metrics
  try:        curl -s -H 'Accept: application/json' '$url?channel=stable-4.13&arch=amd64'
  hotfix:     curl -s '$url?channel=stable-4.13&id=0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60'   (customer acme sees 4.13.1-hotfix.1)
  a cluster:  $bin agent --state-dir /tmp/agent --release-document $example/releases/4.12.3-amd64.json \\
                --channel stable-4.13 --upstream $url --port 9099
              $bin adm upgrade --include-not-recommended
              (it lists the updates; this example's releases are not real images, so it cannot apply
              one: scripts/update-demo.sh takes a whole update, with a registry and signatures)
${settings:+  (addresses as above unless $settings sets others)
}Stop with Ctrl-C.
TEXT
exec "$bin" serve -v --releases "$example/releases" --graph-data "$example/graph-data" \
  --cluster_directory.path "$clusters" "$@"
