#!/usr/bin/env bash
# The crash loop: kubestat-aggregator is SIGKILLed at a random moment of ingest, CYCLES
# times, against one simulated cluster. Each cycle restarts it on the same store, measures
# the time until /readyz is 200, reads every node's and pod's 1d sample count, and compares
# it with the counts read just before the previous kill: an acknowledged sample that was
# served must survive, so no count may go down. Prints one line per cycle and a summary.
# Usage: bench/scripts/crash_loop.sh [BUILD_DIR] [NODES] [CYCLES]   (defaults: build, 100, 100)
# Exits non-zero when any count decreased.
set -euo pipefail

build="${1:-build}"
nodes="${2:-100}"
cycles="${3:-100}"
here="$(cd "$(dirname "$0")" && pwd)"
sim="$build/sim/kubestat-sim"
agg="$build/aggregator/kubestat-aggregator"
[[ -x "$sim" && -x "$agg" ]] || { echo "build $sim and $agg first" >&2; exit 1; }
source "$here/lib.sh"

bench_init crash-loop
port=$(free_port)
# Kubelets on free loopback ports (the node objects carry them), so runs do not collide; no
# pod churn, so an object missing after a restart is a loss, not a pod the cluster replaced.
start_sim "$sim" --nodes="$nodes" --pods-per-node=10 --kubelet-address-mode=ports --kubelet-port=0 \
  --pod-lifetime=0
bench_user crashloop '- users: [crashloop]' '  verbs: [get, list]' \
  '  apiGroups: [metrics]' '  resources: [nodes, pods]'
auth=(-H "Authorization: Bearer $token")
base="https://127.0.0.1:$port"

# Every object's 1d count, "kind/namespace/name count" per line, sorted.
counts() {
  { curl -kfs "${auth[@]}" "$base/apis/metrics/v1alpha1/nodes"; echo
    curl -kfs "${auth[@]}" "$base/apis/metrics/v1alpha1/pods"; echo; } | python3 -c '
import json, sys
for line in sys.stdin:
    if not line.strip():
        continue
    for item in json.loads(line)["items"]:
        meta = item["metadata"]
        windows = item.get("machine") or item.get("pod") or {}
        if "1d" in windows:
            print(item.get("machine") is not None and "node" or "pod",
                  meta.get("namespace", "") + "/" + meta["name"], windows["1d"]["count"])
' | sort
}

decreases=0
ready_ms=()
before="$work/before.txt"
: >"$before"
for cycle in $(seq "$cycles"); do
  start=$(date +%s%N)
  start_aggregator "$agg" "$port" --metric-resolution=2s --kubelet-timeout=1s \
    --kubelet-use-node-status-port
  until curl -kfs "$base/readyz" >/dev/null 2>&1; do
    kill -0 "$agg_pid" 2>/dev/null || { echo "cycle $cycle: the aggregator exited"; tail -n 20 "$work/aggregator.log"; exit 1; }
    sleep 0.02
  done
  ready=$((($(date +%s%N) - start) / 1000000))
  ready_ms+=("$ready")
  after="$work/after.txt"
  counts >"$after"
  lost=$(join -j 1 <(awk '{print $1"|"$2, $3}' "$before" | sort) \
    <(awk '{print $1"|"$2, $3}' "$after" | sort) | awk '$3 < $2' | wc -l)
  gone=$(join -v 1 <(awk '{print $1"|"$2}' "$before" | sort) \
    <(awk '{print $1"|"$2}' "$after" | sort) | wc -l)
  decreases=$((decreases + lost + gone))
  # A random moment of ingest: 0 to 4 s (two rounds) after ready.
  sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", r / 32767 * 4 }')"
  counts >"$before"
  kill -KILL "$agg_pid"
  wait "$agg_pid" 2>/dev/null || true
  unset 'pids[${#pids[@]}-1]'
  echo "cycle $cycle: ready in ${ready} ms, $(wc -l <"$after") objects, $lost counts decreased, $gone objects gone"
done
sorted=$(printf '%s\n' "${ready_ms[@]}" | sort -n)
pick() { echo "$sorted" | awk -v q="$1" '{ a[NR] = $1 } END { i = int(NR * q + 0.999); if (i < 1) i = 1; print a[i] }'; }
echo "crash loop: $cycles kill -9 cycles, $nodes nodes; 1d counts decreased or objects gone: $decreases;" \
  "ready time p50 $(pick 0.5) ms, p95 $(pick 0.95) ms, max $(pick 1) ms"
((decreases == 0))
