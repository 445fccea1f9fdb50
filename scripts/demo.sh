#!/usr/bin/env bash
# Runs kubestat on a simulated cluster on this machine: installs what is missing, builds
# kubestat-sim and kubestat-aggregator, starts both on loopback (the simulated
# kube-apiserver proxies the metrics APIs to the aggregator, as the aggregation layer does,
# so kubectl top works), waits until the aggregator is ready, prints the URLs and commands
# to try, then each scrape round's summary. Ctrl-C stops everything.
#
#   scripts/demo.sh [--nodes N] [--pods-per-node N] [--faults node-0003=timeout,...]
#                   [--resolution 10s] [--kubelet-timeout 5s] [--port 8080] [--grpc-port 8081]
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
grpc_port=8081
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
    --grpc-port) grpc_port="$2"; shift 2 ;;
    --grpc-port=*) grpc_port="${1#*=}"; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
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
  --metrics-backend="http://127.0.0.1:$port" \
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
  --grpc-address=127.0.0.1 --grpc-port="$grpc_port" --storage-dir="$work/store" \
  >"$work/aggregator.log" 2>&1 &
agg_pid=$!
ready=0
for _ in $(seq 600); do
  kill -0 "$agg_pid" 2>/dev/null || break
  if curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 &&
    grep -q "round 2:" "$work/aggregator.log"; then
    ready=1
    break
  fi
  sleep 0.2
done
if ((!ready)); then
  echo "demo: kubestat-aggregator did not serve two scrape rounds:" >&2
  cat "$work/aggregator.log" >&2
  exit 1
fi
# A namespace, app and tier to suggest, from the first pod served (cpu needs two scrapes, so
# pods are served from round 2 on).
first_pod=$( (curl -fs "http://127.0.0.1:$port/apis/metrics.k8s.io/v1beta1/pods" || true) |
  head -c 4096)
label() { grep -o "\"$1\":\"[^\"]*\"" <<<"$first_pod" | sed -n '1s/.*:"\(.*\)"/\1/p' || true; }
ns=$(label namespace)
ns=${ns:-shop}
app=$(label app)
app=${app:-web}
tier=$(label tier)
tier=${tier:-frontend}
kc="kubectl --kubeconfig=$work/kubeconfig"

echo
echo "simulated cluster: $nodes nodes x $pods pods, faults: ${faults:-none}"
sed 's/^/  sim: /' "$work/sim.log"
echo "aggregator (REST on :$port, gRPC kubestat.v1.Aggregator on 127.0.0.1:$grpc_port):"
echo "  metrics    http://127.0.0.1:$port/metrics"
echo "  health     http://127.0.0.1:$port/healthz  /livez  /readyz"
echo "  store      $work/store"
echo "  scrapes    $work/scrapes.jsonl (one JSON line per node scrape)"
echo
echo "Try (in another terminal):"
echo "  curl 'http://127.0.0.1:$port/apis/metrics/v1alpha1/namespaces/$ns/pods?pretty=true'"
echo "  curl 'http://127.0.0.1:$port/apis/metrics/v1alpha1/nodes/node-0000?pretty=true'"
echo "  curl 'http://127.0.0.1:$port/apis/metrics.k8s.io/v1beta1/namespaces/$ns/pods?labelSelector=tier%3D$tier'"
echo "  $kc top node"
echo "  $kc top pod -A"
echo "  $kc top pod -n $ns -l app=$app"
echo "  $kc get --raw /apis/metrics.k8s.io/v1beta1/nodes"
echo
echo "Ctrl-C stops everything. Scrape rounds:"
tail -n +1 -F "$work/aggregator.log" &
tail_pid=$!
wait "$agg_pid"
