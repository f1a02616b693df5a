#!/usr/bin/env bash
# What phased rollouts and automatic brakes buy a fleet.
#
# A real-size channel (stable-4.11 of the shared fixture's graph-data, December 2022,
# 52 releases) gets a new release, 4.11.19, a day after the start; its edge from the
# previous release (4.11.18) fails for 20 % of the clusters that take it (component
# network). 100,000 simulated clusters (60 % on 4.11.18, 25 % on 4.11.17, 15 % on
# 4.11.16) poll `cincinnati serve` for 14 simulated days; each takes the newest
# recommended update after an admin delay (exponential, mean 2 days) and updates for
# 45 min to 2 h. Four cases, the same fleet and the same draws (one seed), so that they
# differ by the service alone:
#   none     no phasing, no brakes
#   phased   phased rollout over P7D, no brakes
#   brakes   automatic brakes, no phasing
#   both     phased rollout over P7D and automatic brakes
# Prints a table (also in OUT/table.md); each case's outputs (summary.json, CSVs, the
# adoption chart) are in OUT/<case>/run.
#
#   bash bench/fleet_cases.sh [OUT] [CASE...]
#   env: CINCINNATI_BIN (build/cincinnati), CINCINNATI_SHARED_FIXTURES (../shared/fixtures),
#        FLEET_CLUSTERS (100000), FLEET_DAYS (14), FLEET_TIME_SCALE (2400: 14 days in 8.4 min),
#        FLEET_DELAY (exp:2d), FLEET_SEED (1)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${CINCINNATI_BIN:-$ROOT/build/cincinnati}
FIXTURES=${CINCINNATI_SHARED_FIXTURES:-$ROOT/../shared/fixtures}
GRAPH_DATA=$FIXTURES/graph-data-134475077ed4eeaedf3c339f12915b9cdaf7d194
OUT=${1:-$ROOT/build/fleet-cases}
shift || true
CASES=("$@")
[ ${#CASES[@]} -gt 0 ] || CASES=(none phased brakes both)
CLUSTERS=${FLEET_CLUSTERS:-100000}
DAYS=${FLEET_DAYS:-14}
SCALE=${FLEET_TIME_SCALE:-2400}
DELAY=${FLEET_DELAY:-exp:2d}
SEED=${FLEET_SEED:-1}
START=2026-01-01T00:00:00Z

[ -x "$BIN" ] || { echo "no $BIN: build first (cmake --build build --target cincinnati)" >&2; exit 1; }
[ -d "$GRAPH_DATA" ] || { echo "no $GRAPH_DATA: set CINCINNATI_SHARED_FIXTURES" >&2; exit 1; }
mkdir -p "$OUT"

for name in "${CASES[@]}"; do
  case $name in
    none) phased=none brakes=false ;;
    phased) phased=P7D brakes=false ;;
    brakes) phased=none brakes=true ;;
    both) phased=P7D brakes=true ;;
    *) echo "unknown case $name (none, phased, brakes, both)" >&2; exit 1 ;;
  esac
  dir=$OUT/$name
  rm -rf "$dir"
  from=$(python3 "$ROOT/bench/fleet_graph_data.py" "$GRAPH_DATA" "$dir/input" --start $START --phased $phased | head -1)
  echo "== $name: phased $phased, brakes $brakes, $CLUSTERS clusters, $DAYS days at ${SCALE}x" >&2
  "$BIN" fleet simulate --releases "$dir/input/releases" --graph-data "$dir/input/graph-data" \
    --channel stable-4.11 --start $START --days "$DAYS" --time-scale "$SCALE" --clusters "$CLUSTERS" --seed "$SEED" \
    --start-versions "$from=60%,4.11.17=25%,4.11.16=15%" --delay "$DELAY" --update-duration uniform:45m-2h \
    --failure "$from->4.11.19: 20%, component=network" --brakes $brakes --out "$dir/run" | tee "$dir/summary.txt"
done

python3 - "$OUT" "${CASES[@]}" <<'EOF'
import datetime, json, os, sys
out, cases = sys.argv[1], sys.argv[2:]
def t(s):
    return None if s is None else datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
def hours(a, b):
    return "-" if a is None or b is None else "%.1f h" % ((b - a).total_seconds() / 3600)
rows = ["| case | took the bad edge | failed on it | took it before its brake | first failure | rule crossed | brake | "
        "first failure to brake | on 4.11.19 at the end | requests | largest lag | real time |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
for name in cases:
    s = json.load(open(os.path.join(out, name, "run", "summary.json")))
    e = s["edges"][0]
    released = t(s["start"]) + datetime.timedelta(days=1)
    brake = e["brake"]
    rows.append("| %s | %d | %d | %s | %s | %s | %s | %s | %d | %d | %.0f s (%.2f s real) | %.0f s |" % (
        name, e["took"], e["failed"], e["tookBeforeBrake"] if brake else "-",
        hours(released, t(e["firstFailure"])), hours(released, t(e["ruleCrossed"])),
        hours(released, t(brake["since"])) if brake else "-",
        "%d s" % e["timeToBrakeSeconds"] if brake else "-",
        s["finalVersions"].get("4.11.19", 0), s["requests"]["total"], s["maxLagSeconds"], s["maxLagRealSeconds"],
        s["realSeconds"]))
rows.append("")
rows.append("Times are after the new release's start (a day into the run); 'rule crossed' is when the "
            "reports the service accepted first met the default rule (the simulator's own count).")
text = "\n".join(rows) + "\n"
open(os.path.join(out, "table.md"), "w").write(text)
print(text)
EOF
