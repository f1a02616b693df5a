#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs the update service on the
# bundled 4.x example: graph builder and policy engine in one process
# (`cincinnati serve`), on 127.0.0.1:8081 with the reference's /api/upgrades_info
# prefix. Stop it with Ctrl-C. Extra arguments go to `cincinnati serve`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CINCINNATI_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh" cincinnati >/dev/null  # only what it runs

example="$root/examples/ocp-4x"
url="http://127.0.0.1:8081/api/upgrades_info/graph"
# The example's cluster directory (who owns which cluster), rebuilt from its CSV.
clusters="$build/example-clusters.db"
"$build/cincinnati" clusters import --replace --db "$clusters" "$example/clusters.csv" 2>/dev/null
cat <<TEXT
Cincinnati update service on the bundled example ($example)
  graph API:  $url?channel=stable-4.13
  status:     http://127.0.0.1:9081/readyz   http://127.0.0.1:9081/metrics
  try:        curl -s -H 'Accept: application/json' '$url?channel=stable-4.13&arch=amd64'
  hotfix:     curl -s '$url?channel=stable-4.13&id=0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60'   (customer acme sees 4.13.1-hotfix.1)
  a cluster:  $build/cincinnati agent --state-dir /tmp/agent --release-document $example/releases/4.12.3-amd64.json \\
                --channel stable-4.13 --upstream $url --port 9099
              $build/cincinnati adm upgrade --include-not-recommended
Stop with Ctrl-C.
TEXT
exec "$build/cincinnati" serve -v --releases "$example/releases" --graph-data "$example/graph-data" \
  --cluster_directory.path "$clusters" "$@"
