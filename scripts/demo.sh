#!/usr/bin/env bash
# Runs kubestat on a simulated cluster on this machine: installs what is missing, builds
# kubestat-sim and kubestat-aggregator, starts both on loopback, prints the URLs and each
# scrape round's summary. Ctrl-C stops everything.
#
#   scripts/demo.sh [--nodes N] [--pods-per-node N] [--faults node-0003=timeout,...]
#                   [--resolution 10s] [--kubelet-timeout 5s] [--port 8080]
# (the kubelet timeout must be shorter than the resolution)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KUBESTAT_BUILD_DIR:-$root/build}"
nodes=50
pods=30
faults="node-0003=timeout,node-0007=http500"
resolution=10s
timeout=5s
port=8080
while (($#)); do
  case "$1" in
    --nodes) nodes="$2"; shift 2 ;;
    --nodes=*) nodes="${1#*=}"; shift ;;
    --pods-per-node) pods="$2"; shift 2 ;;
    --pods-per-node=*) pods="${1#*=}"; shift ;;
    --faults) faults="$2"; shift 2 ;;
    --faults=*) faults="${1#*=}"; shift ;;
    --resolution) resolution="$2"; shift 2 ;;
    --resolution=*) resolution="${1#*=}"; shift ;;
    --kubelet-timeout) timeout="$2"; shift 2 ;;
    --kubelet-timeout=*) timeout="${1#*=}"; shift ;;
    --port) port="$2"; shift 2 ;;
    --port=*) port="${1#*=}"; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "demo: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DKUBESTAT_BENCH=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target kubestat-sim kubestat-aggregator

work="$(mktemp -d -t kubestat-demo-XXXXXX)"
sim_pid=""
agg_pid=""
tail_pid=""
cleanup() {
  trap - INT TERM EXIT
  for pid in "$tail_pid" "$agg_pid" "$sim_pid"; do
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid" 2>/dev/null || true; fi
  done
  for pid in "$agg_pid" "$sim_pid"; do
    if [[ -n "$pid" ]]; then
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  echo "demo: stopped (logs in $work)"
}
trap cleanup INT TERM EXIT

"$build/sim/kubestat-sim" --nodes="$nodes" --pods-per-node="$pods" \
  --kubelet-address-mode=ports --kubelet-port=0 --faults="$faults" \
  --kubeconfig-out="$work/kubeconfig" >"$work/sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 600); do
  grep -q READY "$work/sim.log" 2>/dev/null && break
  kill -0 "$sim_pid" 2>/dev/null || { cat "$work/sim.log"; exit 1; }
  sleep 0.1
done
grep -q READY "$work/sim.log" || { echo "demo: kubestat-sim did not start" >&2; exit 1; }

"$build/aggregator/kubestat-aggregator" --kubeconfig="$work/kubeconfig" \
  --kubelet-scheme=http --kubelet-preferred-address-types=InternalIP \
  --kubelet-use-node-status-port --metric-resolution="$resolution" --kubelet-timeout="$timeout" \
  --listen-address=127.0.0.1 --port="$port" --scrape-dump="$work/scrapes.jsonl" \
  >"$work/aggregator.log" 2>&1 &
agg_pid=$!
sleep 1
if ! kill -0 "$agg_pid" 2>/dev/null; then
  cat "$work/aggregator.log" >&2
  exit 1
fi

echo
echo "simulated cluster: $nodes nodes x $pods pods, faults: ${faults:-none}"
sed 's/^/  sim: /' "$work/sim.log"
echo "  kubectl --kubeconfig=$work/kubeconfig get nodes"
echo "aggregator:"
echo "  metrics    http://127.0.0.1:$port/metrics"
echo "  health     http://127.0.0.1:$port/healthz"
echo "  scrapes    $work/scrapes.jsonl (one JSON line per node scrape)"
echo "Ctrl-C stops everything. Scrape rounds:"
tail -n +1 -F "$work/aggregator.log" &
tail_pid=$!
wait "$agg_pid"
