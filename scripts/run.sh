#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs the main job on the bundled
# example: the graph builder's graph for examples/ocp-4x, then a policy-engine view of it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CINCINNATI_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh" >/dev/null

bin="$build/cincinnati"
example="$root/examples/ocp-4x"
echo "# graph builder: $bin graph build --releases $example/releases --graph-data $example/graph-data"
"$bin" graph build --releases "$example/releases" --graph-data "$example/graph-data" > "$build/example-graph.json"
cat "$build/example-graph.json"; echo
echo
echo "# policy engine view: channel stable-4.13, arch amd64"
"$bin" graph filter --channel stable-4.13 --arch amd64 "$build/example-graph.json"; echo
echo
echo "# graph-data lint"
"$bin" graph-data check "$example/graph-data"
