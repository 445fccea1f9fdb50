#!/usr/bin/env bash
# kubestat behind the real aggregation layer at size: the real control plane of controlplane/
# (start.sh, the controller-manager and the scheduler at --client-qps requests per second),
# kubestat-sim's hollow nodes (N nodes, their workloads real Deployments and DaemonSets whose
# pods the scheduler binds), and kubestat's aggregator, kubestat-apiserver and bridge as the
# manifests' ServiceAccounts, listening on a veth address of the bench's own. Prints:
#   - how long the cluster took to come up (every Node Ready, every pod Running) and kubestat
#     to its first complete `kubectl top node`;
#   - the latency of `kubectl top node`, `kubectl top pod -n shop` and `kubectl top pod -A`
#     through the real aggregation layer (wall time of the release's kubectl, as a person
#     sees it), p50 and p99 of --samples runs, each answer checked for completeness (every node,
#     every running pod of the namespace) and freshness (the newest sample's age);
#   - the HPA's reaction: a Deployment of 2 hollow pods with an autoscaling/v2 HPA at a
#     300% cpu utilization target; its pods raised to 4 cpu each, the time until the HPA
#     raises the replicas; lowered to 10m, until it brings them back to 2 (the downscale
#     stabilization, 30s, included);
# first with metrics.k8s.io served by the aggregator, then by kubestat-apiserver fed by the
# bridge (as manifests/overlays/metrics-server deploys it); and each process's CPU and RSS
# from /proc at the end.
#
# Usage: bench/scripts/controlplane_load.sh [--nodes 1000] [--pods-per-node 30]
#          [--resolution 10s] [--kubelet-timeout 5s] [--samples 20] [--client-qps 200]
# Environment: KUBESTAT_BUILD_DIR (default build/, with kubestat-sim, -aggregator, -apiserver,
#   -bridge built), KUBESTAT_CACHE (controlplane/build.sh's cache), KUBESTAT_BENCH_KEEP (keep
#   the work directory and its logs). Needs root (the veth pair).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${KUBESTAT_BUILD_DIR:-$root/build}
nodes=1000
pods=30
resolution=10s
kubelet_timeout=5s
samples=20
client_qps=200
while (($#)); do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --pods-per-node) pods=$2; shift 2 ;;
    --resolution) resolution=$2; shift 2 ;;
    --kubelet-timeout) kubelet_timeout=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --client-qps) client_qps=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "controlplane_load: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
((EUID == 0)) || { echo "controlplane_load: needs root (a network namespace and a veth pair)" >&2; exit 1; }

# shellcheck source=bench/scripts/lib.sh
source "$root/bench/scripts/lib.sh"
# shellcheck source=controlplane/kubestat.sh
source "$root/controlplane/kubestat.sh"
bench_init controlplane-load
state=$work/cluster
netns=kubestat-bench-$$
# The control plane first (its state is in $work), then bench_cleanup: the processes, $work.
stop_all() {
  local status=$?
  "$root/controlplane/start.sh" stop "$state" >/dev/null 2>&1 || true
  kubestat_veth_down "$netns"
  bench_cleanup
  exit "$status"
}
trap stop_all EXIT

bin=$("$root/controlplane/build.sh" --quiet)
started=$SECONDS
"$root/controlplane/start.sh" --bin "$bin" --client-qps "$client_qps" "$state" >/dev/null
# shellcheck source=/dev/null
source "$state/control-plane.env"
export KUBECONFIG
kubectl() { "$KUBESTAT_CP_KUBECTL" "$@"; }
echo "Kubernetes $KUBESTAT_CP_VERSION started in $((SECONDS - started))s; $nodes hollow nodes x $pods pods, resolution $resolution"
kubestat_apply_identities metrics-server

started=$SECONDS
"$build/sim/kubestat-sim" --nodes="$nodes" --pods-per-node="$pods" --seed=11 \
  --kubelet-address-mode=ports --kubelet-port=0 --hollow-apiserver="$KUBESTAT_CP_SERVER" \
  --hollow-ca-file="$KUBESTAT_CP_PKI/ca.crt" --hollow-client-cert-file="$KUBESTAT_CP_PKI/admin.crt" \
  --hollow-client-key-file="$KUBESTAT_CP_PKI/admin.key" > "$work/sim.log" 2>&1 &
pids+=($!)
sim_pid=$!

# poll_every SECONDS LIMIT CMD...: polls CMD every SECONDS for at most LIMIT seconds; stops
# the bench when kubestat-sim or the aggregator has exited.
poll_every() {
  local every=$1 end=$((SECONDS + $2))
  shift 2
  until "$@"; do
    kill -0 "$sim_pid" 2>/dev/null || { echo "kubestat-sim exited:"; tail -n 20 "$work/sim.log"; exit 1; }
    if [[ -n "${agg_pid:-}" ]] && ! kill -0 "$agg_pid" 2>/dev/null; then
      echo "kubestat-aggregator exited:"; tail -n 20 "$work/aggregator/log"; exit 1
    fi
    ((SECONDS < end)) || return 1
    sleep "$every"
  done
}
wait_for() { poll_every 5 "$@"; }
running_pods() {
  kubectl get pods -A -l kubestat.dev/hollow=true --field-selector=status.phase=Running \
    --chunk-size=5000 --no-headers 2>/dev/null | wc -l
}
ready_nodes() {
  kubectl get nodes -l kubestat.dev/hollow-node=true --no-headers 2>/dev/null | grep -c ' Ready ' || true
}
all_up() {
  local r n
  n=$(ready_nodes)
  r=$(running_pods)
  echo "  $((SECONDS - started))s: $n nodes Ready, $r pods Running" >&2
  ((n == nodes && r >= nodes * pods))
}
if ! wait_for 3600 all_up 2> "$work/up.log"; then
  tail -n 3 "$work/up.log"
  echo "the cluster did not come up within an hour"
  exit 1
fi
cluster_up=$((SECONDS - started))
total_pods=$(running_pods)
echo "cluster up in ${cluster_up}s: $nodes nodes Ready, $total_pods pods Running"

host=$(kubestat_veth_up "$netns")
kubestat_serving_pair "$work/aggregator-serving" kubestat-aggregator "DNS:kubestat-aggregator-bench.kubestat.svc,IP:$host"
kubestat_serving_pair "$work/apiserver-serving" kubestat-apiserver "DNS:kubestat-apiserver-bench.kubestat.svc,IP:$host"
kubestat_account_kubeconfig "$work/aggregator" kubestat kubestat-aggregator 24h
kubestat_account_kubeconfig "$work/apiserver" kubestat kubestat-apiserver 24h
agg_port=$(free_port)
grpc_port=$(free_port)
apiserver_port=$(free_port)
started=$SECONDS
"$build/aggregator/kubestat-aggregator" --kubeconfig="$work/aggregator/kubeconfig" \
  --authentication-kubeconfig="$work/aggregator/kubeconfig" \
  --authorization-kubeconfig="$work/aggregator/kubeconfig" \
  --listen-address="$host" --secure-port="$agg_port" --cert-dir="$work/aggregator/certs" \
  --tls-cert-file="$work/aggregator-serving/tls.crt" --tls-private-key-file="$work/aggregator-serving/tls.key" \
  --grpc-address=127.0.0.1 --grpc-port="$grpc_port" --storage-dir="$work/aggregator/store" \
  --metric-resolution="$resolution" --kubelet-timeout="$kubelet_timeout" --kubelet-scheme=http \
  --kubelet-preferred-address-types=InternalIP --kubelet-use-node-status-port \
  > "$work/aggregator/log" 2>&1 &
pids+=($!)
agg_pid=$!
"$build/apiserver/kubestat-apiserver" --listen-address="$host" --secure-port="$apiserver_port" \
  --tls-cert-file="$work/apiserver-serving/tls.crt" --tls-private-key-file="$work/apiserver-serving/tls.key" \
  --cert-dir="$work/apiserver/certs" --authentication-kubeconfig="$work/apiserver/kubeconfig" \
  --authorization-kubeconfig="$work/apiserver/kubeconfig" > "$work/apiserver/log" 2>&1 &
pids+=($!)
apiserver_pid=$!
"$build/bridge/kubestat-bridge" --aggregator-address="127.0.0.1:$grpc_port" \
  --aggregator-token-file="$work/aggregator/token" --apiserver-url="https://$host:$apiserver_port" \
  --apiserver-ca-file="$work/apiserver-serving/ca.crt" --apiserver-token-file="$work/aggregator/token" \
  --listen-address=127.0.0.1 --secure-port=0 --cert-dir="$work/bridge-certs" \
  --authentication-kubeconfig="$work/aggregator/kubeconfig" \
  --authorization-kubeconfig="$work/aggregator/kubeconfig" > "$work/bridge.log" 2>&1 &
pids+=($!)
bridge_pid=$!

apiservices=(v1beta1.metrics.k8s.io v1.metrics.k8s.io)
kubestat_expose kubestat-aggregator-bench "$host" "$agg_port" "$work/aggregator-serving/ca.crt" \
  "${apiservices[@]}" v1alpha1.metrics

# kubectl top node lists a Node that has no metrics yet as <unknown>: a row that counts only
# with its figures.
top_nodes_complete() {
  [[ "$(kubectl top node --no-headers 2>/dev/null | grep '^node-' | grep -vc '<unknown>')" == "$nodes" ]]
}
wait_for 600 top_nodes_complete || { echo "kubectl top node never listed the $nodes nodes"; exit 1; }
echo "kubestat: first complete kubectl top node $((SECONDS - started))s after the aggregator started"

shop_running() {
  kubectl -n shop get pods --field-selector=status.phase=Running --no-headers 2>/dev/null | wc -l
}

# One command's wall time in ms, its output in $work/out; $1 the rows wanted, the rest the command.
timed_rows() {
  local want=$1 t0 t1 rows
  shift
  t0=$(date +%s%N)
  "$@" > "$work/out" 2>&1 || true
  t1=$(date +%s%N)
  rows=$(grep . "$work/out" | grep -vc '<unknown>' || true)
  echo "$(((t1 - t0) / 1000000)) $rows $want"
}

# percentiles FILE: "p50 p99 max" of the first column (ms); incomplete answers counted.
summarize() {
  python3 - "$1" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
ms = sorted(int(r[0]) for r in rows)
short = sum(1 for r in rows if int(r[1]) < int(r[2]))
def pct(p):
    return ms[min(len(ms) - 1, int(round(p / 100 * (len(ms) - 1))))]
print("p50 %d ms, p99 %d ms, max %d ms over %d runs; %d incomplete" % (pct(50), pct(99), ms[-1], len(ms), short))
PY
}

# The newest sample's age in seconds among the nodes that metrics.k8s.io lists.
node_age() {
  kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes | python3 -c '
import json, sys, datetime
items = json.load(sys.stdin)["items"]
now = datetime.datetime.now(datetime.timezone.utc)
ages = sorted((now - datetime.datetime.fromisoformat(i["timestamp"].replace("Z", "+00:00"))).total_seconds() for i in items)
print("%d nodes, sample age p50 %.1f s, max %.1f s" % (len(ages), ages[len(ages) // 2], ages[-1]))'
}

# The latencies and the HPA with $1 serving metrics.k8s.io.
measure() {
  local backend=$1 i shop_want
  echo
  echo "== metrics.k8s.io served by $backend"
  echo "  freshness: $(node_age)"
  : > "$work/top-node-$backend"
  for ((i = 0; i < samples; i++)); do
    timed_rows "$nodes" kubectl top node --no-headers >> "$work/top-node-$backend"
  done
  echo "  kubectl top node ($nodes rows):        $(summarize "$work/top-node-$backend")"
  shop_want=$(shop_running)
  : > "$work/top-shop-$backend"
  for ((i = 0; i < samples; i++)); do
    timed_rows "$shop_want" kubectl top pod -n shop --no-headers >> "$work/top-shop-$backend"
  done
  echo "  kubectl top pod -n shop ($shop_want rows): $(summarize "$work/top-shop-$backend")"
  : > "$work/top-all-$backend"
  for ((i = 0; i < (samples + 3) / 4; i++)); do
    timed_rows "$total_pods" kubectl top pod -A --no-headers >> "$work/top-all-$backend"
  done
  echo "  kubectl top pod -A ($total_pods rows):  $(summarize "$work/top-all-$backend")"
  hpa "$backend"
}

hpa_replicas() { kubectl -n kubestat-bench get deployment hpa-probe -o jsonpath='{.spec.replicas}'; }
hpa() {
  local t0 reps
  kubectl create namespace kubestat-bench --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl -n kubestat-bench apply -f - >/dev/null <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: hpa-probe}
spec:
  replicas: 2
  selector: {matchLabels: {app: hpa-probe}}
  template:
    metadata: {labels: {app: hpa-probe, kubestat.dev/hollow: "true"}}
    spec:
      nodeSelector: {kubestat.dev/hollow-node: "true"}
      terminationGracePeriodSeconds: 0
      containers:
      - name: main
        image: registry.k8s.io/pause:3.10
        resources: {requests: {cpu: 500m, memory: 64Mi}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: hpa-probe}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: hpa-probe}
  minReplicas: 2
  maxReplicas: 6
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 300}}
EOF
  active() {
    [[ "$(kubectl -n kubestat-bench get hpa hpa-probe -o jsonpath='{.status.conditions[?(@.type=="ScalingActive")].status}')" == True &&
       "$(hpa_replicas)" == 2 ]]
  }
  wait_for 600 active || { echo "  hpa: never ScalingActive at 2 replicas"; return; }
  t0=$SECONDS
  kubectl -n kubestat-bench annotate pods -l app=hpa-probe kubestat.dev/cpu=4 --overwrite >/dev/null
  up() { (($(hpa_replicas) > 2)); }
  if poll_every 1 600 up; then
    reps=$(hpa_replicas)
    echo "  HPA: 2 pods at 4 cpu (800% of requests): 2 -> $reps replicas $((SECONDS - t0))s after the load rose"
  else
    echo "  HPA: no scale-up within 600s"
  fi
  # Every pod, the new ones included, lowered.
  t0=$SECONDS
  kubectl -n kubestat-bench annotate pods -l app=hpa-probe kubestat.dev/cpu=10m --overwrite >/dev/null
  down() {
    kubectl -n kubestat-bench annotate pods -l app=hpa-probe kubestat.dev/cpu=10m --overwrite >/dev/null 2>&1
    [[ "$(hpa_replicas)" == 2 ]]
  }
  if poll_every 1 600 down; then
    echo "  HPA: load at 10m: back to 2 replicas $((SECONDS - t0))s after it dropped (30s of it the downscale stabilization)"
  else
    echo "  HPA: no scale-down within 600s"
  fi
  kubectl delete namespace kubestat-bench --wait=true >/dev/null
}
measure kubestat-aggregator

kubestat_expose kubestat-apiserver-bench "$host" "$apiserver_port" "$work/apiserver-serving/ca.crt" "${apiservices[@]}"
switched() {
  kubestat_apiservices_available "${apiservices[@]}" &&
    kubectl get --raw '/apis/metrics.k8s.io/v1beta1/nodes?watch=1&timeoutSeconds=1' >/dev/null 2>&1 &&
    top_nodes_complete
}
wait_for 300 switched || { echo "kubestat-apiserver never served metrics.k8s.io through the aggregation layer"; exit 1; }
measure kubestat-apiserver

echo
echo "== processes at the end (CPU since start, RSS now)"
tck=$(getconf CLK_TCK)
for name in etcd kube-apiserver kube-controller-manager kube-scheduler; do
  pid=$(<"$state/pids/$name.pid")
  printf '  %-24s CPU %7.1f s  RSS %6d MiB\n' "$name" "$(awk -v t="$(cpu_ticks "$pid")" -v h="$tck" 'BEGIN { print t / h }')" $(($(rss_kib "$pid") / 1024))
done
for entry in "kubestat-sim:$sim_pid" "kubestat-aggregator:$agg_pid" "kubestat-apiserver:$apiserver_pid" "kubestat-bridge:$bridge_pid"; do
  pid=${entry#*:}
  printf '  %-24s CPU %7.1f s  RSS %6d MiB\n' "${entry%%:*}" "$(awk -v t="$(cpu_ticks "$pid")" -v h="$tck" 'BEGIN { print t / h }')" $(($(rss_kib "$pid") / 1024))
done
