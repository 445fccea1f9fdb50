#!/usr/bin/env bash
# A full store volume, probed as an operator would: kubestat-sim with NODES nodes x 30 pods
# (its aggregation proxy in front of the aggregator), the aggregator from BUILD_DIR with its
# store on a VOLUME_MIB tmpfs and `--storage-min-free=MIN_FREE` (default 256Mi: a tenth of
# the volume), scraping every second. Phases, PHASE_S seconds each, probed every second:
#   written     the volume has room;
#   full        a filler takes all but 64 KiB of it;
#   room        the filler is removed;
#   restarted   the volume is filled again and the aggregator restarted on it.
# Each probe reads `kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes/node-0001` through
# the simulator (fresh when its timestamp is at most 2 s old), /readyz, and
# kubestat_store_durable. Prints one line per phase and exits 1 if the aggregator ever died
# or an answer was missing or stale. Needs root (it mounts the tmpfs).
#
#   bench/scripts/disk_full_probe.sh [BUILD_DIR] [NODES] [VOLUME_MIB] [MIN_FREE] [PHASE_S]
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-build}" && pwd)"
nodes="${2:-100}"
volume_mib="${3:-40}"
min_free="${4:-256Mi}"
phase_s="${5:-20}"
source "$here/lib.sh"
for b in sim/kubestat-sim aggregator/kubestat-aggregator; do
  [[ -x "$build/$b" ]] || { echo "build $build/$b first" >&2; exit 1; }
done
command -v kubectl >/dev/null || { echo "kubectl is needed" >&2; exit 1; }

bench_init disk-full-probe
volume="$work/volume"
mkdir -p "$volume" "$work/certs"
mount -t tmpfs -o "size=${volume_mib}m" tmpfs "$volume"
trap 'bench_cleanup_volume' EXIT
bench_cleanup_volume() {
  bench_cleanup_procs
  umount "$volume" 2>/dev/null || true
  bench_cleanup
}
bench_cleanup_procs() {
  [[ -n "${agg_pid:-}" ]] && kill -TERM "$agg_pid" 2>/dev/null && wait "$agg_pid" 2>/dev/null
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
  pids=()
}
printf '%s\n' 'rules:' "- users: ['*']" "  verbs: ['*']" "  apiGroups: ['*']" \
  "  resources: ['*']" "- users: ['*']" "  verbs: ['*']" "  nonResourceURLs: ['*']" \
  >"$work/rules.yaml"

port=$(free_port)
start_sim "$build/sim/kubestat-sim" --nodes="$nodes" --pods-per-node=30 --seed=1 \
  --kubelet-address-mode=ports --kubelet-port=0 --apiserver-port="$(free_port)" \
  --metrics-backend="http://127.0.0.1:$port"

# node-0001's timestamp through kubectl and the simulator, "" when there is none.
node_timestamp() {
  kubectl --kubeconfig="$work/kubeconfig" get --raw \
    /apis/metrics.k8s.io/v1beta1/nodes/node-0001 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["timestamp"])' 2>/dev/null || true
}

agg_pid=""
# Starts the aggregator and waits until it is ready and serves node-0001 (the first round).
start_aggregator() {
  "$build/aggregator/kubestat-aggregator" --kubeconfig="$work/kubeconfig" \
    --kubelet-scheme=http --kubelet-preferred-address-types=InternalIP \
    --kubelet-use-node-status-port --listen-address=127.0.0.1 --grpc-port=0 \
    --storage-dir="$volume/store" --metric-resolution=1s --kubelet-timeout=900ms \
    --port="$port" --secure-port=0 --cert-dir="$work/certs" --anonymous-auth \
    --authorization-rules-file="$work/rules.yaml" --storage-min-free="$min_free" \
    >>"$work/aggregator.log" 2>&1 &
  agg_pid=$!
  for _ in $(seq 300); do
    [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" == 200 &&
      -n "$(node_timestamp)" ]] && return
    sleep 0.2
  done
}

died=0
bad=0
phase() {
  local name=$1 ready=0 fresh=0 durable=0 probes=0
  for _ in $(seq "$phase_s"); do
    sleep 1
    probes=$((probes + 1))
    kill -0 "$agg_pid" 2>/dev/null || { died=1; break; }
    [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" == 200 ]] &&
      ready=$((ready + 1))
    local stamp
    stamp=$(node_timestamp)
    if [[ -n "$stamp" ]] && (($(date -u +%s) - $(date -u -d "$stamp" +%s) <= 2)); then
      fresh=$((fresh + 1))
    fi
    curl -s "http://127.0.0.1:$port/metrics" | grep -q '^kubestat_store_durable 1' &&
      durable=$((durable + 1))
  done
  ((fresh == probes)) || bad=1
  printf '%-10s probes %2d  /readyz 200: %2d  fresh through kubectl: %2d  durable: %2d  used %s\n' \
    "$name" "$probes" "$ready" "$fresh" "$durable" "$(df -h --output=pcent "$volume" | tail -1)"
}

fill() {
  local avail
  avail=$(df -B1 --output=avail "$volume" | tail -1)
  ((avail > 65536)) && fallocate -l $((avail - 65536)) "$volume/filler"
  return 0
}

start_aggregator
phase written
fill
phase full
rm -f "$volume/filler"
phase room
fill
kill -TERM "$agg_pid"
wait "$agg_pid" 2>/dev/null || true
start_aggregator
phase restarted
rm -f "$volume/filler"
kill -0 "$agg_pid" 2>/dev/null || died=1
grep -q "Assertion" "$work/aggregator.log" && died=1
echo "aggregator died: $died; a probe without a fresh answer: $bad"
grep -E "store: |rocksdb: " "$work/aggregator.log" | cut -c1-200 | head -12
((died == 0 && bad == 0))
