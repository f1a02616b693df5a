#!/usr/bin/env bash
# An update end to end on one machine, on real parts: a Debian docker-registry, two
# signed releases (4.1.0, 4.1.1) built from examples/update/, `cincinnati serve`
# scraping them, an agent at 4.1.0 and two components (ingress, and machine-config
# updating a pool of 3 machines one by one).
#
#   scripts/update-demo.sh          start everything, print what to try, wait for Ctrl-C
#   scripts/update-demo.sh --check  take the update to 4.1.1 and wait until Completed
#
# Ports: registry 5000, serve 8081 (status 9081), agent 9099 (override with
# DEMO_REGISTRY_PORT, DEMO_SERVE_PORT, DEMO_STATUS_PORT, DEMO_AGENT_PORT). Each must be
# free: the demo refuses to start otherwise, naming the port and the variable to set,
# so that it never talks to (or, on exit, stops) a process it did not start.
# CINCINNATI_BIN=PATH runs that binary instead of building build/cincinnati.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CINCINNATI_BUILD_DIR:-$root/build}"
example="$root/examples/update"
reg_port="${DEMO_REGISTRY_PORT:-5000}" serve_port="${DEMO_SERVE_PORT:-8081}"
status_port="${DEMO_STATUS_PORT:-9081}" agent_port="${DEMO_AGENT_PORT:-9099}"
seen=""
for spec in "the registry:$reg_port:DEMO_REGISTRY_PORT" "cincinnati serve:$serve_port:DEMO_SERVE_PORT" \
            "serve's status routes:$status_port:DEMO_STATUS_PORT" "the agent:$agent_port:DEMO_AGENT_PORT"; do
  IFS=: read -r what port var <<<"$spec"
  case " $seen " in *" $port "*)
    echo "error: port $port is given twice; set $var to another free port" >&2; exit 1;;
  esac
  seen="$seen $port"
  if ! python3 -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))' "$port" 2>/dev/null; then
    echo "error: port $port (for $what) is taken on 127.0.0.1; set $var to a free port" >&2
    exit 1
  fi
done
if [ -n "${CINCINNATI_BIN:-}" ]; then
  bin="$CINCINNATI_BIN"
else
  "$root/scripts/build.sh" cincinnati >/dev/null
  bin="$build/cincinnati"
fi
registry="127.0.0.1:$reg_port"
agent="http://127.0.0.1:$agent_port"
work="$(mktemp -d /tmp/cincinnati-update-demo.XXXXXX)"
pids=()
keep_logs=0
cleanup() {
  set +e
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  # The agent hands over to a new process on the same port: stop whichever answers.
  pid=$(curl -s "$agent/apis/agent.cincinnati.openshift.io/v1/updateprogress" 2>/dev/null | sed -n 's/.*"agentPid": *\([0-9]*\).*/\1/p')
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  gpgconf --homedir "$work/gnupg" --kill all >/dev/null 2>&1 || true
  [ "$keep_logs" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT
wait_for() {  # url what
  for _ in $(seq 1 100); do curl -sf -o /dev/null "$1" && return 0; sleep 0.2; done
  echo "error: $2 did not start (log: $work/$2.log)" >&2
  cat "$work/$2.log" >&2 || true
  exit 1
}

echo "== a registry on $registry"
printf 'version: 0.1\nlog: {level: error}\nstorage:\n  filesystem: {rootdirectory: %s}\nhttp:\n  addr: %s\n' \
  "$work/registry" "$registry" > "$work/registry.yml"
/usr/bin/docker-registry serve "$work/registry.yml" > "$work/registry.log" 2>&1 & pids+=($!)
wait_for "http://$registry/v2/" registry

echo "== a release key (GnuPG, in $work/gnupg) and two signed releases"
mkdir -p -m 700 "$work/gnupg" "$work/keys"
gpg --homedir "$work/gnupg" --batch --pinentry-mode loopback --passphrase '' \
  --quick-gen-key 'Demo releases <releases@example.com>' ed25519 sign 1d >/dev/null 2>&1
gpg --homedir "$work/gnupg" --armor --export > "$work/keys/demo.asc"
for v in 4.1.0 4.1.1; do
  prev=(); [ "$v" = 4.1.1 ] && prev=(--previous 4.1.0)
  image=$("$bin" release new --version "$v" "${prev[@]}" --metadata io.openshift.upgrades.graph.release.channels=stable-4.1 \
    --payload-manifests "$example/manifests" --verification-keys "$work/keys" \
    --verification-stores "file://$work/signatures" --to "http://$registry/ocp/release:$v")
  "$bin" release sign "$image" --store "$work/signatures" --gnupg-home "$work/gnupg" >/dev/null
  echo "   $v  $image"
done

echo "== cincinnati serve on 127.0.0.1:$serve_port, scraping the registry"
"$bin" serve --registry "http://$registry" --repository ocp/release --graph-data "$example/graph-data" \
  --service.port "$serve_port" --status.port "$status_port" > "$work/serve.log" 2>&1 & pids+=($!)
wait_for "http://127.0.0.1:$status_port/readyz" serve

echo "== an agent at 4.1.0 on $agent, and its components"
"$bin" agent --state-dir "$work/agent" --release-image "http://$registry/ocp/release:4.1.0" \
  --registry.insecure "$registry" --verification.keys "$work/keys" --verification.stores "file://$work/signatures" \
  --upstream "http://127.0.0.1:$serve_port/api/upgrades_info/graph" --channel stable-4.1 --poll-interval 5 \
  --port "$agent_port" > "$work/agent.log" 2>&1 & pids+=($!)
wait_for "$agent/readyz" agent
"$bin" component --name ingress --agent "$agent" --version 4.1.0 > "$work/ingress.log" 2>&1 & pids+=($!)
"$bin" component --name machine-config --machines 3 --agent "$agent" --version 4.1.0 > "$work/machine-config.log" 2>&1 & pids+=($!)

if [ "${1:-}" = "--check" ]; then
  for _ in $(seq 1 50); do "$bin" adm upgrade --agent "$agent" | grep -q '4.1.1' && break; sleep 0.2; done
  "$bin" adm upgrade --agent "$agent"
  "$bin" adm upgrade --agent "$agent" --to 4.1.1
  for _ in $(seq 1 150); do
    out=$("$bin" adm upgrade --agent "$agent" || true)
    echo "$out" | head -1
    if echo "$out" | grep -q '^Cluster version is 4.1.1$'; then
      echo "== completed: 4.1.1 verified and applied; every component reports it"
      exit 0
    fi
    sleep 1
  done
  echo "error: the update did not complete; logs in $work" >&2
  tail -20 "$work/agent.log" >&2
  keep_logs=1
  exit 1
fi

# The upgrade operator's fleet for this demo: its one agent, at the port it has.
sed "s|http://127.0.0.1:9099|$agent|" "$root/examples/upgrades/fleet.yaml" >"$work/fleet.yaml"
cat <<TEXT

Try, in another terminal:
  $bin adm upgrade --agent $agent                 # 4.1.1 is a recommended update
  $bin adm upgrade --agent $agent --to 4.1.1      # verify, download, apply: agent first, then ingress, then machine-config
  watch -n1 $bin adm upgrade --agent $agent       # progress; the agent hands over to a new process mid-way
  curl -s $agent/apis/config.openshift.io/v1/clusteroperators/machine-config   # the pool, machine by machine
  $bin upgrade-operator --fleet $work/fleet.yaml --configs $root/examples/upgrades/configs \\
    --config $root/examples/upgrades/operator.yaml --state-dir $work/uo   # the upgrade operator, for this agent
Logs are in $work. Stop with Ctrl-C.
TEXT
wait "${pids[0]}"
