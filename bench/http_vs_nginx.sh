#!/usr/bin/env bash
# Serves the same policy-engine answer from `cincinnati serve` and from nginx (static
# file, keep-alive, sendfile) and loads both with wrk under identical settings:
# a ~5 KB and a ~165 KB body, 1 and 64 connections. Prints requests/s, p99 latency and
# our throughput as a ratio of nginx's. A third case, "phased", is per-cluster answers
# of a ~165 KB phased-rollout channel (graph-data 2.x, weekly releases with P2D/P14D
# windows, clock frozen a day after the latest release) with a random cluster id on
# every request, against nginx serving one such answer. Also:
#  * "target": channel-target views (--views.channel_targets '*') of the large
#    channel, `version` chosen at random among its 200 releases on every request;
#  * "lookup": the 4.x example with its hotfix, `id` chosen at random among 1,000
#    clusters known to a remote cluster directory (a small Python server on
#    127.0.0.1), after one warm-up pass: the cache-hit path;
#  * "sqlite": the same with the embedded SQLite directory (a query per request).
# And real answer sizes: every channel of the shared fixture's graph-data
# (OpenShift's, December 2022) served over releases made for it by
# bench/real_releases.py; ten channels whose answers span 1.4 KB to 173 KB, each at 1,
# 32 and 64 connections (the "real-<channel>" rows).
# "percluster" is per-cluster answers of a real-size phased channel in the full graph of
# its time: OpenShift's graph of November 2021 as graph-data 2.0.0 (bench/phased_2021.py
# from the same fixture: every channel of then, 29, in managing files, all with P2D patch
# and P14D minor windows; releases out by the end of November 2021, blocked edges and
# risks into them kept), clock frozen at 2021-11-26T00:00:00Z, a day after 4.8.22. It
# prints the tree's channels, releases and edges (the graph builder's graph, from
# `cincinnati graph build`). The load is on stable-4.8 (52 releases; edges into six of
# them in their windows; answers of ~30 KB): it fetches stable-4.8's answer for 1,000
# random cluster ids (fixed seed), plain and gzip, prints how many distinct answers they
# are, their sizes and edges, and gives them to nginx as percluster/<id>.json and
# .json.gz (our gzip bytes, checked to decompress to the plain file, served by
# gzip_static). Then it loads ours with a fresh random id on every request and nginx
# with a random one of the 1,000 files, plain and with `Accept-Encoding: gzip` (rows
# "percluster" and "percluster-gzip", 64 connections), and prints our server's RSS after
# the load. Last, it asks for every channel x arch the server has (its
# {prefix}/v1/ui/channels), plain and gzip with one cluster id, so that every view holds
# its per-cluster pieces, and prints the RSS again: the full 2021 graph with phasing;
# then which channels have edges in their windows ({prefix}/v1/ui/rollouts).
# nginx serves the same answers as files, picked at random the same way (the bytes
# column is one of them; for percluster, their mean size). Before the table it prints
# the response-size reduction of target views (mean over every release of the channel)
# for the 4.x example's stable-4.13 and the generated eus-4.21.
#
# "channeltarget" is the view cache under more keys than it ever counted: the same 2021
# tree with --views.channel_targets '*', every channel x every release of the graph as
# `version` (10,991 keys; a version not in the channel gets the channel's view), each
# request with a random cluster id. A first pass (curl) asks every key once: it warms the
# cache and gives nginx the same answers as files, ct/<channel>/<version>.json. Then
# both are loaded with a random key per request (row "ct-all", 64 connections), and a
# second server the same way with 100 of the keys ("ct-100"). After each it prints the
# view cache's misses during the measured passes (cincinnati_pe_view_cache_misses_total:
# flat when no request ran the chain), its bytes, entries and evictions, and the RSS.
# The budget is --views.max_cached_bytes $CINCINNATI_VIEW_BYTES (default 268435456).
# CINCINNATI_PHASED_2021=DIR takes the tree from DIR/graph-data and DIR/releases instead
# of making it (percluster and channeltarget).
#
#   bash bench/http_vs_nginx.sh [seconds per run, default 10] [all|real|classic|percluster|channeltarget] [repeats]
#
# `repeats`: runs of each measurement, one row each, then a "med" row of the medians
# (default 3 for percluster or channeltarget alone, else 1). CINCINNATI_BIN=/path/to/cincinnati serves
# with that binary and does not run scripts/build.sh (the classic case still needs
# $CINCINNATI_BUILD_DIR/bench/pipeline_bench); percluster alone sets up nothing else.
# Installs wrk and nginx-light if missing (Debian's nginx has gzip_static built in).
# Everything listens on 127.0.0.1 only, and every process it starts is stopped on exit.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CINCINNATI_BUILD_DIR:-$root/build}"
bin="${CINCINNATI_BIN:-$build/cincinnati}"
duration="${1:-10}"
cases="${2:-all}"
repeats="${3:-$([ "$cases" = percluster ] || [ "$cases" = channeltarget ] && echo 3 || echo 1)}"
want() { [ "$cases" = all ] || [ "$cases" = "$1" ]; }
# The classic and real cases' inputs are made unless only the 2021 tree is asked for.
classic_inputs() { [ "$cases" != percluster ] && [ "$cases" != channeltarget ]; }

need=()
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
[ -n "${CINCINNATI_BIN:-}" ] || "$root/scripts/build.sh" >/dev/null
[ -x "$bin" ] || { echo "no cincinnati binary at $bin" >&2; exit 1; }
if want percluster && ! /usr/sbin/nginx -V 2>&1 | grep -q http_gzip_static_module; then
  echo "this nginx has no gzip_static module (install nginx-core or nginx)" >&2; exit 1
fi

work="$(mktemp -d)"
chmod 755 "$work"  # nginx workers run as another user
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
  || echo $((20000 + RANDOM % 20000)); }

start_serve() {  # name releases graph-data [extra flags...]; sets serve_port
  local ports="$work/$1.ports"
  "$bin" serve --releases "$2" --graph-data "$3" --service.port 0 --status.port 0 \
    --testing.ports_file "$ports" "${@:4}" 2>"$work/$1.log" &
  pids+=($!)
  for _ in $(seq 1 300); do [ -s "$ports" ] && grep -q status= "$ports" && break; sleep 0.1; done
  local main status
  main=$(sed -n 's/^main=//p' "$ports"); status=$(sed -n 's/^status=//p' "$ports")
  for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$status/readyz" >/dev/null && break; sleep 0.1; done
  serve_port=$main
}

# wrk scripts: a fresh random cluster id per request, or a random one of a list.
cat > "$work/random-id.lua" <<'LUA'
-- A random cluster id (UUID) on every request. Each thread draws 65,536 ids of its own
-- at start and picks one at random per request: as cheap for wrk as picking one of
-- nginx's files (making a UUID per request cost wrk more than the server's work), and
-- as fresh for the server (answers are not cached by id; two threads share no id).
local template = "xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx"
local threads = 0
local ids = {}
function setup(thread)
  threads = threads + 1
  thread:set("number", threads)
end
function init(args)
  math.randomseed(os.time() * 1000 + (number or 0))
  for i = 1, 65536 do
    ids[i] = string.gsub(template, "x", function() return string.format("%x", math.random(0, 15)) end)
  end
end
request = function()
  local id = ids[math.random(1, #ids)]
  local sep = string.find(wrk.path, "?", 1, true) and "&" or "?"
  return wrk.format("GET", wrk.path .. sep .. "id=" .. id)
end
LUA
random_lua() {  # file param|path name values...: a random value per request, as the
  # query parameter `name` (ours) or as the file `name/<value>.json` (nginx)
  local file=$1 how=$2 name=$3; shift 3
  { printf 'local values = {'; printf '"%s",' "$@"; printf '}\n'
    printf 'math.randomseed(os.time())\nrequest = function()\n  local v = values[math.random(1, #values)]\n'
    if [ "$how" = param ]; then
      printf '  local sep = string.find(wrk.path, "?", 1, true) and "&" or "?"\n'
      printf '  return wrk.format("GET", wrk.path .. sep .. "%s=" .. v)\nend\n' "$name"
    else
      printf '  return wrk.format("GET", "/%s/" .. v .. ".json")\nend\n' "$name"
    fi
  } > "$file"
}
# The shared fixture: OpenShift's graph-data of December 2022 (real and percluster).
fixture_graph_data="$root/../shared/fixtures/graph-data-134475077ed4eeaedf3c339f12915b9cdaf7d194"
mkdir -p "$work/www"  # nginx's root

# The classic and real cases' inputs (everything but percluster and channeltarget).
if classic_inputs; then
  # Inputs: the bundled 4.x example (small answers) and the generated 10,000-release
  # graph (large answers), in one graph-builder chain each.
  "$build/bench/pipeline_bench" --write-generated "$work/generated"

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

  # Target views, and their sizes against the whole channel.
  start_serve target "$work/generated/releases" "$work/generated/graph-data" --views.channel_targets '*'; target_port=$serve_port
  start_serve small_target "$root/examples/ocp-4x/releases" "$root/examples/ocp-4x/graph-data" --views.channel_targets '*'
  small_target_port=$serve_port
  target_base="http://127.0.0.1:$target_port/api/upgrades_info/graph?channel=eus-4.21&arch=amd64"
  target_url="$target_base&version=4.20.50"
  size_report() {  # label base-url versions...
    local label=$1 base=$2; shift 2
    local full total=0 n=0
    full=$(curl -sf "$base" | wc -c)
    for v in "$@"; do total=$((total + $(curl -sf "$base&version=$v" | wc -c))); n=$((n + 1)); done
    awk -v l="$label" -v f="$full" -v t="$total" -v n="$n" \
      'BEGIN {printf "%-34s channel %8d B, target views mean %8.0f B over %d versions: %.1f%% smaller\n", l, f, t / n, n, 100 * (1 - t / n / f)}'
  }
  eus_versions=(); for minor in 20 21; do for patch in $(seq 0 99); do eus_versions+=("4.$minor.$patch"); done; done
  random_lua "$work/random-version.lua" param version "${eus_versions[@]}"
  random_lua "$work/nginx-target.lua" path target "${eus_versions[@]}"
  size_report "4.x example, stable-4.13 (amd64)" "http://127.0.0.1:$small_target_port/api/upgrades_info/graph?channel=stable-4.13&arch=amd64" \
    4.12.3 4.12.4 4.13.0 4.13.1 4.13.2
  size_report "generated eus-4.21 (amd64)" "$target_base" "${eus_versions[@]}"

  # Cluster directories: 1,000 clusters, every tenth of customer acme (the hotfix's).
  python3 - "$work" <<'PY'
import json, sys, uuid, random
random.seed(6)
ids = [str(uuid.UUID(int=random.getrandbits(128), version=4)) for _ in range(1000)]
clusters = [{"id": i, "customer": "acme" if n % 10 == 0 else "customer%d" % n, "labels": {"tier": "silver"}} for n, i in enumerate(ids)]
json.dump(clusters, open(sys.argv[1] + "/clusters.json", "w"))
open(sys.argv[1] + "/ids.txt", "w").write("\n".join(ids) + "\n")
PY
  mapfile -t cluster_ids < "$work/ids.txt"
  cat > "$work/directory.py" <<'PY'
# GET /clusters/<id> from clusters.json; 404 otherwise.
import json, sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
clusters = {c["id"]: c for c in json.load(open(sys.argv[1]))}
class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        c = clusters.get(self.path.rsplit("/", 1)[-1])
        body = json.dumps({"customer": c["customer"], "labels": c["labels"]}).encode() if c else b""
        self.send_response(200 if c else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
open(sys.argv[2], "w").write(str(server.server_address[1]))
server.serve_forever()
PY
  python3 "$work/directory.py" "$work/clusters.json" "$work/directory.port" & pids+=($!)
  for _ in $(seq 1 100); do [ -s "$work/directory.port" ] && break; sleep 0.1; done
  "$bin" clusters import --db "$work/clusters.db" "$work/clusters.json" 2>/dev/null
  start_serve lookup "$root/examples/ocp-4x/releases" "$root/examples/ocp-4x/graph-data" \
    --cluster_directory.url "http://127.0.0.1:$(cat "$work/directory.port")"; lookup_port=$serve_port
  start_serve sqlite "$root/examples/ocp-4x/releases" "$root/examples/ocp-4x/graph-data" \
    --cluster_directory.path "$work/clusters.db"; sqlite_port=$serve_port
  lookup_base="http://127.0.0.1:$lookup_port/api/upgrades_info/graph?channel=stable-4.13&arch=amd64"
  sqlite_base="http://127.0.0.1:$sqlite_port/api/upgrades_info/graph?channel=stable-4.13&arch=amd64"
  lookup_url="$lookup_base&id=${cluster_ids[0]}"
  sqlite_url="$sqlite_base&id=${cluster_ids[0]}"
  random_lua "$work/random-cluster.lua" param id "${cluster_ids[@]}"
  random_lua "$work/nginx-lookup.lua" path lookup "${cluster_ids[@]}"
  random_lua "$work/nginx-sqlite.lua" path sqlite "${cluster_ids[@]}"
  grep -q hotfix <(curl -sf "$lookup_url") || { echo "the acme cluster does not see the hotfix" >&2; exit 1; }

  # Real sizes: the fixture graph-data over releases made for it.
  real_channels=(prerelease-4.2 candidate-4.13 stable-4.1 stable-4.3 stable-4.4 stable-4.5 candidate-4.4 stable-4.9
                 candidate-4.9 candidate-4.11)
  python3 "$root/bench/real_releases.py" "$fixture_graph_data" "$work/real-releases" >/dev/null
  start_serve real "$work/real-releases" "$fixture_graph_data"; real_port=$serve_port

  for c in "${real_channels[@]}"; do
    curl -sf "http://127.0.0.1:$real_port/api/upgrades_info/graph?channel=$c&arch=amd64" -o "$work/www/real-$c.json"
  done
  curl -sf "$small_url" -o "$work/www/small.json"
  curl -sf "$large_url" -o "$work/www/large.json"
  curl -sf "$phased_url" -o "$work/www/phased.json"
  # nginx gets every per-version and per-cluster answer as a file, so both servers send
  # the same mix of bodies. Fetching them also warms our caches (and the directory's).
  mkdir -p "$work/www/target" "$work/www/lookup" "$work/www/sqlite"
  for v in "${eus_versions[@]}"; do echo "url = \"$target_base&version=$v\""; echo "output = \"$work/www/target/$v.json\""; done > "$work/fetch.curl"
  for id in "${cluster_ids[@]}"; do
    echo "url = \"$lookup_base&id=$id\""; echo "output = \"$work/www/lookup/$id.json\""
    echo "url = \"$sqlite_base&id=$id\""; echo "output = \"$work/www/sqlite/$id.json\""
  done >> "$work/fetch.curl"
  curl -sf -K "$work/fetch.curl"
  cp "$work/www/target/4.20.50.json" "$work/www/target.json"
  cp "$work/www/lookup/${cluster_ids[0]}.json" "$work/www/lookup.json"
  cp "$work/www/sqlite/${cluster_ids[0]}.json" "$work/www/sqlite.json"
fi

# percluster: the November 2021 graph as graph-data 2.0.0 over releases made for it, and
# stable-4.8's answers for 1,000 cluster ids, plain and gzip (this also warms our caches).
p21_data="$work/phased-2021" p21_releases="$work/phased-2021-releases"
if [ -n "${CINCINNATI_PHASED_2021:-}" ]; then
  p21_data="$CINCINNATI_PHASED_2021/graph-data" p21_releases="$CINCINNATI_PHASED_2021/releases"
elif want percluster || want channeltarget; then
  python3 "$root/bench/phased_2021.py" "$fixture_graph_data" "$p21_data" | sed 's/^/2021 tree: /'
  python3 "$root/bench/real_releases.py" "$p21_data" "$p21_releases" >/dev/null
fi
if want percluster; then
  "$bin" graph build -q --releases "$p21_releases" --graph-data "$p21_data" |
    python3 -c 'import json, sys
d = json.load(sys.stdin)
channels = {c for n in d["nodes"] for c in n["metadata"].get("io.openshift.upgrades.graph.release.channels", "").split(",") if c}
cond = d.get("conditionalEdges", [])
print("percluster: graph builder: %d channels, %d releases, %d edges, %d conditional edges (%d risks)"
      % (len(channels), len(d["nodes"]), len(d["edges"]), sum(len(c["edges"]) for c in cond), len({r["name"] for c in cond for r in c["risks"]})))'
  percluster_now=2021-11-26T00:00:00Z
  start_serve percluster "$p21_releases" "$p21_data" --testing.now "$percluster_now"
  percluster_port=$serve_port; percluster_pid=${pids[-1]}
  percluster_base="http://127.0.0.1:$percluster_port/api/upgrades_info/graph?channel=stable-4.8&arch=amd64"
  python3 - > "$work/percluster-ids.txt" <<'PY'
import random, uuid
random.seed(2021)
for _ in range(1000):
    print(uuid.UUID(int=random.getrandbits(128), version=4))
PY
  mapfile -t percluster_ids < "$work/percluster-ids.txt"
  mkdir -p "$work/www/percluster"
  for id in "${percluster_ids[@]}"; do
    echo "url = \"$percluster_base&id=$id\""; echo "output = \"$work/www/percluster/$id.json\""
  done > "$work/percluster.curl"
  curl -sf -K "$work/percluster.curl"
  sed 's/\.json"$/.json.gz"/' "$work/percluster.curl" > "$work/percluster-gzip.curl"
  curl -sf -H 'Accept-Encoding: gzip' -K "$work/percluster-gzip.curl"
  # nginx's gzip_static sends <id>.json.gz as it is: our gzip bytes, once they are known
  # to decompress to <id>.json. The gzip -6 size is printed for comparison.
  python3 - "$work/www/percluster" "$work/percluster.sizes" "${percluster_ids[@]}" <<'PY'
import gzip, hashlib, json, subprocess, sys
where, sizes_file, ids = sys.argv[1], sys.argv[2], sys.argv[3:]
answers, plain, ours, gzip6, edges, cond = set(), [], [], [], [], []
union, common, edge_sets = set(), None, set()
for i in ids:
    body = open("%s/%s.json" % (where, i), "rb").read()
    gz = open("%s/%s.json.gz" % (where, i), "rb").read()
    if gzip.decompress(gz) != body:
        sys.exit("%s: our gzip body does not decompress to the plain answer" % i)
    answers.add(hashlib.sha256(body).hexdigest())
    plain.append(len(body)); ours.append(len(gz))
    gzip6.append(len(subprocess.run(["gzip", "-6", "-n", "-c"], input=body, capture_output=True, check=True).stdout))
    doc = json.loads(body)
    names = [n["version"] for n in doc["nodes"]]
    es = {(names[a], names[b]) for a, b in doc["edges"]}
    es |= {("risk", e["from"], e["to"]) for c in doc.get("conditionalEdges", []) for e in c["edges"]}
    edges.append(len(doc["edges"])); cond.append(len(es) - len(doc["edges"]))
    union |= es
    edge_sets.add(frozenset(es))
    common = es if common is None else common & es
    nodes = len(names)
window = union - common
mean = lambda xs: sum(xs) / len(xs)
print("percluster: stable-4.8 answers for %d cluster ids: %d distinct (sha256), %d distinct edge sets"
      % (len(ids), len(answers), len(edge_sets)))
print("  %d nodes; %d-%d edges (mean %.0f) and %d conditional; %d edges in window (seen by some ids, not all) into %d releases: %s"
      % (nodes, min(edges), max(edges), mean(edges), max(cond), len(window), len({e[-1] for e in window}),
         " ".join(sorted({e[-1] for e in window}, key=lambda v: tuple(map(int, v.split(".")))))))
print("  bytes: plain %d-%d (mean %.0f), our gzip mean %.0f, gzip -6 -n mean %.0f"
      % (min(plain), max(plain), mean(plain), mean(ours), mean(gzip6)))
open(sizes_file, "w").write("%.0f %.0f\n" % (mean(plain), mean(ours)))
PY
  read -r percluster_plain percluster_gzip < "$work/percluster.sizes"
  echo "  our RSS after fetching them: $(awk '/^VmRSS/ {print $2, $3}' "/proc/$percluster_pid/status")"
  random_lua "$work/nginx-percluster.lua" path percluster "${percluster_ids[@]}"
fi


# channeltarget: every channel x release of the 2021 tree as a channel-target view; the
# warm pass fetches each once (nginx's files), on a server for all keys and one for 100.
ct_metric() {  # status-port name: the sample's value
  curl -sf "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n {print $2}'
}
ct_lua() {  # keys-file ours-lua nginx-lua: a random key per request (ours: with a random id)
  python3 - "$@" <<'PY'
import sys
keys = [line.split() for line in open(sys.argv[1]) if line.strip()]
ours = ",".join('"channel=%s&arch=amd64&version=%s"' % (c, v) for c, v in keys)
theirs = ",".join('"/ct/%s/%s.json"' % (c, v) for c, v in keys)
open(sys.argv[2], "w").write("""local keys = {%s}
local template = "xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx"
local threads = 0
local ids = {}
function setup(thread)
  threads = threads + 1
  thread:set("number", threads)
end
function init(args)
  math.randomseed(os.time() * 1000 + (number or 0))
  for i = 1, 16384 do
    ids[i] = string.gsub(template, "x", function() return string.format("%%x", math.random(0, 15)) end)
  end
end
request = function()
  return wrk.format("GET", wrk.path .. "?" .. keys[math.random(1, #keys)] .. "&id=" .. ids[math.random(1, #ids)])
end
""" % ours)
open(sys.argv[3], "w").write("""local paths = {%s}
math.randomseed(os.time())
request = function()
  return wrk.format("GET", paths[math.random(1, #paths)])
end
""" % theirs)
PY
}
if want channeltarget; then
  ct_flags=(--testing.now 2021-11-26T00:00:00Z --views.channel_targets '*' --views.max_cached_bytes "${CINCINNATI_VIEW_BYTES:-268435456}")
  start_serve ct-all "$p21_releases" "$p21_data" "${ct_flags[@]}"
  ct_port=$serve_port; ct_pid=${pids[-1]}; ct_status=$(sed -n 's/^status=//p' "$work/ct-all.ports")
  start_serve ct-100 "$p21_releases" "$p21_data" "${ct_flags[@]}"
  ct100_port=$serve_port; ct100_pid=${pids[-1]}; ct100_status=$(sed -n 's/^status=//p' "$work/ct-100.ports")
  # Every channel x every release (fixed shuffle); the 100-key set is its first 100.
  python3 - "http://127.0.0.1:$ct_port/api/upgrades_info" > "$work/ct-all.keys" <<'PY'
import json, random, sys, urllib.request
base = sys.argv[1]
channels = json.load(urllib.request.urlopen(base + "/v1/ui/channels"))["channels"]
versions = set()
for c in channels:
    doc = json.load(urllib.request.urlopen(base + "/graph?channel=%s&arch=amd64" % c))
    versions |= {n["version"] for n in doc["nodes"]}
keys = [(c, v) for c in channels for v in sorted(versions)]
random.Random(2021).shuffle(keys)
print("\n".join("%s %s" % k for k in keys))
PY
  head -100 "$work/ct-all.keys" > "$work/ct-100.keys"
  for set in all 100; do
    port_var=ct_port; [ "$set" = all ] || port_var=ct100_port
    awk -v base="http://127.0.0.1:${!port_var}/api/upgrades_info/graph" -v www="$work/www/ct" \
      '{printf "url = \"%s?channel=%s&arch=amd64&version=%s&id=00000000-0000-4000-8000-000000000000\"\noutput = \"%s/%s/%s.json\"\n", base, $1, $2, www, $1, $2}' \
      "$work/ct-$set.keys" > "$work/ct-$set.curl"
    ct_lua "$work/ct-$set.keys" "$work/ct-$set-ours.lua" "$work/ct-$set-nginx.lua"
  done
  mkdir -p "$work/www/ct"
  cut -d' ' -f1 "$work/ct-all.keys" | sort -u | while read -r c; do mkdir -p "$work/www/ct/$c"; done
  warm_start=$(date +%s.%N)
  curl -sf -K "$work/ct-all.curl" || { echo "a channel-target answer failed" >&2; exit 1; }
  echo "channeltarget: warm pass over $(wc -l < "$work/ct-all.keys") keys in $(awk -v a="$warm_start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s;" \
    "misses $(ct_metric "$ct_status" cincinnati_pe_view_cache_misses_total), view cache $(ct_metric "$ct_status" cincinnati_pe_view_cache_bytes) bytes" \
    "in $(ct_metric "$ct_status" cincinnati_pe_view_cache_entries) entries, evictions $(ct_metric "$ct_status" cincinnati_pe_view_cache_evictions_total);" \
    "RSS $(awk '/^VmRSS/ {print $2, $3}' "/proc/$ct_pid/status")"
  sed 's#/www/ct/#/www/ct100/#' "$work/ct-100.curl" > "$work/ct-100-warm.curl"  # nginx's files come from ct-all
  mkdir -p "$work/www/ct100"
  cut -d' ' -f1 "$work/ct-100.keys" | sort -u | while read -r c; do mkdir -p "$work/www/ct100/$c"; done
  curl -sf -K "$work/ct-100-warm.curl" || { echo "a channel-target answer failed" >&2; exit 1; }
fi

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
    location /percluster/ { gzip_static on; }  # <id>.json.gz for Accept-Encoding: gzip
  }
}
NGINX
/usr/sbin/nginx -c "$work/nginx.conf" -p "$work" -g 'daemon off;' &
pids+=($!)
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$nginx_port/" && break; sleep 0.1; done

if classic_inputs; then
  cmp -s "$work/www/small.json" <(curl -sf "http://127.0.0.1:$nginx_port/small.json") || { echo "nginx serves different bytes" >&2; exit 1; }
fi
if want percluster; then
  # Both send the same gzip bytes for Accept-Encoding: gzip, and the plain file without it.
  id=${percluster_ids[0]}
  for url in "$percluster_base&id=$id" "http://127.0.0.1:$nginx_port/percluster/$id.json"; do
    curl -sf -D "$work/headers" -H 'Accept-Encoding: gzip' "$url" -o "$work/body.gz"
    grep -qi '^content-encoding: *gzip' "$work/headers" || { echo "no Content-Encoding: gzip from $url" >&2; exit 1; }
    cmp -s "$work/body.gz" "$work/www/percluster/$id.json.gz" || { echo "$url: different gzip bytes" >&2; exit 1; }
    cmp -s "$work/www/percluster/$id.json" <(curl -sf "$url") || { echo "$url: different plain bytes" >&2; exit 1; }
  done
fi

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

compare() {  # label bytes our-url nginx-url connections... [-- our wrk flags -- nginx wrk flags]
  local label=$1 bytes=$2 ours=$3 theirs=$4; shift 4
  local conns=() extra=() nginx_extra=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do conns+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do extra+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  nginx_extra=("$@")
  for c in "${conns[@]}"; do
    local runs=() name=$label
    for r in $(seq 1 "$repeats"); do
      [ "$repeats" -eq 1 ] || name="$label #$r"
      read -r our_rps our_p99 <<<"$(run_wrk "$ours" "$c" "${extra[@]}")"
      read -r ngx_rps ngx_p99 <<<"$(run_wrk "$theirs" "$c" "${nginx_extra[@]}")"
      ratio=$(awk -v a="$our_rps" -v b="$ngx_rps" 'BEGIN {printf "%.2f", a / b}')
      printf '%-20s %7s %5s | %12s %9s | %12s %9s | %6s\n' "$name" "$bytes" "$c" "$our_rps" "$our_p99" "$ngx_rps" "$ngx_p99" "$ratio"
      runs+=("$our_rps $our_p99 $ngx_rps $ngx_p99")
    done
    [ "$repeats" -gt 1 ] || continue
    read -r our_rps our_p99 ngx_rps ngx_p99 <<<"$(for col in 1 2 3 4; do
      printf '%s\n' "${runs[@]}" | awk -v c="$col" '{print $c}' | sort -g |
        awk '{v[NR] = $1} END {printf "%s ", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
    done)"
    ratio=$(awk -v a="$our_rps" -v b="$ngx_rps" 'BEGIN {printf "%.2f", a / b}')
    printf '%-20s %7s %5s | %12s %9s | %12s %9s | %6s\n' "$label med" "$bytes" "$c" "$our_rps" "$our_p99" "$ngx_rps" "$ngx_p99" "$ratio"
  done
}

printf '%-20s %7s %5s | %12s %9s | %12s %9s | %6s\n' body bytes conns "cincinnati" "p99 ms" "nginx" "p99 ms" ratio
nginx_base="http://127.0.0.1:$nginx_port"
if [ "$cases" = all ] || [ "$cases" = real ]; then
  for c in "${real_channels[@]}"; do
    compare "real-$c" "$(wc -c < "$work/www/real-$c.json")" \
      "http://127.0.0.1:$real_port/api/upgrades_info/graph?channel=$c&arch=amd64" "$nginx_base/real-$c.json" 1 32 64
  done
fi
if [ "$cases" = all ] || [ "$cases" = classic ]; then
  compare small "$(wc -c < "$work/www/small.json")" "$small_url" "$nginx_base/small.json" 1 32 64
  compare large "$(wc -c < "$work/www/large.json")" "$large_url" "$nginx_base/large.json" 1 32 64
  compare phased "$(wc -c < "$work/www/phased.json")" "$phased_base" "$nginx_base/phased.json" 1 64 \
    -- -s "$work/random-id.lua" -- -s "$work/random-id.lua"
  compare target "$(wc -c < "$work/www/target.json")" "$target_base" "$nginx_base/target.json" 1 64 \
    -- -s "$work/random-version.lua" -- -s "$work/nginx-target.lua"
  compare lookup "$(wc -c < "$work/www/lookup.json")" "$lookup_base" "$nginx_base/lookup.json" 1 64 \
    -- -s "$work/random-cluster.lua" -- -s "$work/nginx-lookup.lua"
  compare sqlite "$(wc -c < "$work/www/sqlite.json")" "$sqlite_base" "$nginx_base/sqlite.json" 1 64 \
    -- -s "$work/random-cluster.lua" -- -s "$work/nginx-sqlite.lua"
fi
if want channeltarget; then
  for set in all 100; do
    if [ "$set" = all ]; then st=$ct_status pid=$ct_pid url="http://127.0.0.1:$ct_port/api/upgrades_info/graph"
    else st=$ct100_status pid=$ct100_pid url="http://127.0.0.1:$ct100_port/api/upgrades_info/graph"; fi
    bytes=$(while read -r c v; do stat -c %s "$work/www/ct/$c/$v.json"; done < "$work/ct-$set.keys" |
      awk '{t += $1} END {printf "%.0f", t / NR}')  # the mean answer
    misses=$(ct_metric "$st" cincinnati_pe_view_cache_misses_total)
    compare "ct-$set" "$bytes" "$url" "$nginx_base/ct-$set" 64 -- -s "$work/ct-$set-ours.lua" -- -s "$work/ct-$set-nginx.lua"
    echo "channeltarget ct-$set: misses during the measured passes: $(awk -v a="$misses" -v b="$(ct_metric "$st" cincinnati_pe_view_cache_misses_total)" 'BEGIN {print b - a}')," \
      "hits $(ct_metric "$st" cincinnati_pe_view_cache_hits_total); view cache $(ct_metric "$st" cincinnati_pe_view_cache_bytes) bytes" \
      "(budget ${CINCINNATI_VIEW_BYTES:-268435456}) in $(ct_metric "$st" cincinnati_pe_view_cache_entries) entries," \
      "evictions $(ct_metric "$st" cincinnati_pe_view_cache_evictions_total); RSS $(awk '/^VmRSS/ {print $2, $3}' "/proc/$pid/status")"
  done
fi
if want percluster; then
  compare percluster "$percluster_plain" "$percluster_base" "$nginx_base/percluster/${percluster_ids[0]}.json" 64 \
    -- -s "$work/random-id.lua" -- -s "$work/nginx-percluster.lua"
  compare percluster-gzip "$percluster_gzip" "$percluster_base" "$nginx_base/percluster/${percluster_ids[0]}.json" 64 \
    -- -s "$work/random-id.lua" -H 'Accept-Encoding: gzip' -- -s "$work/nginx-percluster.lua" -H 'Accept-Encoding: gzip'
  echo "percluster: our RSS after the load: $(awk '/^VmRSS/ {print $2, $3}' "/proc/$percluster_pid/status")"
  # Every channel x arch the server has, plain and gzip, with one cluster id: every view
  # then holds its per-cluster pieces (a view with no edge in a window has none).
  percluster_prefix="http://127.0.0.1:$percluster_port/api/upgrades_info"
  curl -sf "$percluster_prefix/v1/ui/channels" -o "$work/percluster-channels.json"
  python3 - "$work/percluster-channels.json" "$percluster_prefix/graph" "${percluster_ids[0]}" "$work/percluster-all" \
    > "$work/percluster-all.curl" <<'PY'
import json, sys
listing, base, cid, where = sys.argv[1:]
doc = json.load(open(listing))
for c in doc["channels"]:
    for a in doc["arches"]:
        print('url = "%s?channel=%s&arch=%s&id=%s"' % (base, c, a, cid))
        print('output = "%s/%s-%s.json"' % (where, c, a))
PY
  mkdir -p "$work/percluster-all"
  read -r all_channels all_arches < <(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(len(d["channels"]), len(d["arches"]))' "$work/percluster-channels.json")
  curl -sf -K "$work/percluster-all.curl" || { echo "a channel's answer failed" >&2; exit 1; }
  sed 's/\.json"$/.json.gz"/' "$work/percluster-all.curl" > "$work/percluster-all-gzip.curl"
  curl -sf -H 'Accept-Encoding: gzip' -K "$work/percluster-all-gzip.curl" || { echo "a channel's gzip answer failed" >&2; exit 1; }
  all_views=$(ls "$work/percluster-all"/*.json | wc -l)
  all_bytes=$(cat "$work/percluster-all"/*.json | wc -c)
  echo "percluster: fetched $all_views views ($all_channels channels x $all_arches arches: $(python3 -c 'import json, sys; print(" ".join(json.load(open(sys.argv[1]))["arches"]))' "$work/percluster-channels.json")), plain and gzip, one cluster id; $all_bytes bytes plain in all"
  echo "percluster: RSS with every channel's per-cluster answers: $(awk '/^VmRSS/ {print $2, $3}' "/proc/$percluster_pid/status")"
  # Which channels are per-cluster at all (edges in their windows), asked after the RSS.
  python3 - "$work/percluster-channels.json" "$percluster_prefix/v1/ui/rollouts" <<'PY'
import json, sys, urllib.parse, urllib.request
channels = json.load(open(sys.argv[1]))["channels"]
windows = {}
for c in channels:
    doc = json.load(urllib.request.urlopen(sys.argv[2] + "?channel=" + urllib.parse.quote(c)))
    n = sum(1 for r in doc["rollouts"] if r["share"] < 1)
    if n:
        windows[c] = n
print("percluster: %d of %d channels have edges in their windows (%s)"
      % (len(windows), len(channels), ", ".join("%s %d" % cw for cw in sorted(windows.items()))))
PY
fi
