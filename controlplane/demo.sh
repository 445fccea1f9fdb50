#!/usr/bin/env bash
# Runs kubestat in front of a real Kubernetes control plane on this machine, for a person to
# try (`scripts/demo.sh --control-plane` runs this): installs what is missing, builds kubestat
# and (once, into its cache) the control plane of controlplane/build.sh, starts it
# (controlplane/start.sh), registers kubestat-sim's hollow nodes in it (their workloads made
# real Deployments and DaemonSets), applies the manifests' ServiceAccounts, RBAC and
# APIServices, and runs the aggregator, the bridge and kubestat-apiserver as those
# ServiceAccounts (TokenRequest tokens), behind the real aggregation layer:
# metrics.k8s.io served by kubestat-apiserver (as manifests/overlays/metrics-server deploys
# it), metrics/v1alpha1 by the aggregator (windows and recommendations). Prints the commands
# to try, then each scrape round. Ctrl-C stops everything.
#
# The aggregation layer reaches kubestat only at a non-loopback address: the demo makes a
# network namespace with a veth pair of its own (10.254.x.y) and the servers listen on its
# host end, so it runs as root.
#
#   controlplane/demo.sh [--nodes N] [--pods-per-node N] [--resolution 10s]
#   --nodes N          hollow nodes (default 5)
#   --pods-per-node N  pods of the model per node (default 6)
#   --resolution D     the aggregator's scrape resolution (default 10s)
# Environment: KUBESTAT_BUILD_DIR (default build/), KUBESTAT_CACHE (build.sh's cache).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${KUBESTAT_BUILD_DIR:-$root/build}
nodes=5
pods=6
resolution=10s
while (($#)); do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --nodes=*) nodes=${1#*=}; shift ;;
    --pods-per-node) pods=$2; shift 2 ;;
    --pods-per-node=*) pods=${1#*=}; shift ;;
    --resolution) resolution=$2; shift 2 ;;
    --resolution=*) resolution=${1#*=}; shift ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "demo: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if ((EUID != 0)); then
  echo "demo: the control-plane demo makes a network namespace and a veth pair: run it as root" >&2
  exit 1
fi

"$root/scripts/install-deps.sh"
# As scripts/demo.sh: the test script shares this build directory.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target kubestat-sim kubestat-aggregator kubestat-apiserver \
  kubestat-bridge
echo "demo: the control plane (the first build takes 10 to 25 minutes on two cores; later runs reuse its cache)"
bin=$("$root/controlplane/build.sh")

work=$(mktemp -d -t kubestat-cp-demo-XXXXXX)
state=$work/cluster
netns=kubestat-demo-$$
pids=()
tail_pid=""
cleanup() {
  trap - INT TERM EXIT
  [[ -n "$tail_pid" ]] && kill "$tail_pid" 2>/dev/null
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  "$root/controlplane/start.sh" stop "$state" || true
  kubestat_veth_down "$netns"
  echo "demo: stopped (logs in $work)"
}
trap cleanup INT TERM EXIT
# shellcheck source=controlplane/kubestat.sh
source "$root/controlplane/kubestat.sh"

"$root/controlplane/start.sh" --bin "$bin" "$state" >/dev/null
# shellcheck source=/dev/null
source "$state/control-plane.env"
export KUBECONFIG
kubectl() { "$KUBESTAT_CP_KUBECTL" "$@"; }

# The manifests' identities and APIServices: the ServiceAccounts, ClusterRoles and bindings of
# base/ and overlays/metrics-server (whose APIServices serve metrics.k8s.io), not their
# workloads, which run here as processes.
kubestat_apply_identities metrics-server

# Hollow nodes: the sim's kubelets, their Nodes and Leases in the real API server, the model's
# workloads as real Deployments and DaemonSets.
"$build/sim/kubestat-sim" --nodes="$nodes" --pods-per-node="$pods" --kubelet-address-mode=ports \
  --kubelet-port=0 --hollow-apiserver="$KUBESTAT_CP_SERVER" \
  --hollow-ca-file="$KUBESTAT_CP_PKI/ca.crt" --hollow-client-cert-file="$KUBESTAT_CP_PKI/admin.crt" \
  --hollow-client-key-file="$KUBESTAT_CP_PKI/admin.key" > "$work/sim.log" 2>&1 &
pids+=($!)

host=$(kubestat_veth_up "$netns") || { echo "demo: ip refused the network namespace" >&2; exit 1; }
kubestat_serving_pair "$work/aggregator-serving" kubestat-aggregator \
  "DNS:kubestat-aggregator-demo.kubestat.svc,IP:$host"
kubestat_serving_pair "$work/apiserver-serving" kubestat-apiserver \
  "DNS:kubestat-apiserver-demo.kubestat.svc,IP:$host"
kubestat_account_kubeconfig "$work/aggregator" kubestat kubestat-aggregator 24h
kubestat_account_kubeconfig "$work/apiserver" kubestat kubestat-apiserver 24h
agg_port=$(kubestat_free_port)
grpc_port=$(kubestat_free_port)
apiserver_port=$(kubestat_free_port)

"$build/aggregator/kubestat-aggregator" --kubeconfig="$work/aggregator/kubeconfig" \
  --authentication-kubeconfig="$work/aggregator/kubeconfig" \
  --authorization-kubeconfig="$work/aggregator/kubeconfig" \
  --listen-address="$host" --secure-port="$agg_port" --cert-dir="$work/aggregator/certs" \
  --tls-cert-file="$work/aggregator-serving/tls.crt" \
  --tls-private-key-file="$work/aggregator-serving/tls.key" \
  --grpc-address=127.0.0.1 --grpc-port="$grpc_port" --storage-dir="$work/aggregator/store" \
  --metric-resolution="$resolution" --kubelet-scheme=http \
  --kubelet-preferred-address-types=InternalIP --kubelet-use-node-status-port \
  > "$work/aggregator/log" 2>&1 &
pids+=($!)
"$build/apiserver/kubestat-apiserver" --listen-address="$host" --secure-port="$apiserver_port" \
  --tls-cert-file="$work/apiserver-serving/tls.crt" \
  --tls-private-key-file="$work/apiserver-serving/tls.key" --cert-dir="$work/apiserver/certs" \
  --authentication-kubeconfig="$work/apiserver/kubeconfig" \
  --authorization-kubeconfig="$work/apiserver/kubeconfig" > "$work/apiserver/log" 2>&1 &
pids+=($!)
"$build/bridge/kubestat-bridge" --aggregator-address="127.0.0.1:$grpc_port" \
  --aggregator-token-file="$work/aggregator/token" --apiserver-url="https://$host:$apiserver_port" \
  --apiserver-ca-file="$work/apiserver-serving/ca.crt" \
  --apiserver-token-file="$work/aggregator/token" --listen-address=127.0.0.1 --secure-port=0 \
  --cert-dir="$work/bridge-certs" --authentication-kubeconfig="$work/aggregator/kubeconfig" \
  --authorization-kubeconfig="$work/aggregator/kubeconfig" > "$work/bridge.log" 2>&1 &
pids+=($!)

kubestat_expose kubestat-apiserver-demo "$host" "$apiserver_port" "$work/apiserver-serving/ca.crt" \
  v1beta1.metrics.k8s.io v1.metrics.k8s.io
kubestat_expose kubestat-aggregator-demo "$host" "$agg_port" "$work/aggregator-serving/ca.crt" \
  v1alpha1.metrics

# A viewer: a client certificate of the cluster CA, allowed pods' metrics in shop only.
viewer=$work/viewer
kubestat_user_cert "$viewer" kubestat-viewer

# Ready when kubectl top node, through the aggregation layer and kubestat-apiserver, shows
# every hollow node.
echo "demo: waiting for the hollow nodes, their pods and the first scrapes"
kubectl create namespace shop --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl -n shop create role pod-metrics-reader --verb=get,list --resource=pods.metrics.k8s.io \
  --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl -n shop create rolebinding kubestat-viewer --role=pod-metrics-reader --user=kubestat-viewer \
  --dry-run=client -o yaml | kubectl apply -f - >/dev/null
ready=0
for _ in $(seq 600); do
  for pid in "${pids[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "demo: a process exited; its logs are in $work:" >&2
      tail -n 5 "$work"/*.log "$work"/*/log >&2
      exit 1
    fi
  done
  if [[ "$(kubectl top node --no-headers 2>/dev/null | grep -c '^node-')" == "$nodes" ]]; then
    ready=1
    break
  fi
  sleep 0.5
done
((ready)) || { echo "demo: kubectl top node does not show the $nodes hollow nodes after 300s (logs in $work)" >&2; exit 1; }

kc=kubectl
kv="kubectl --kubeconfig=$viewer/kubeconfig"
echo
echo "Kubernetes $KUBESTAT_CP_VERSION (kube-apiserver, kube-controller-manager, kube-scheduler, etcd $KUBESTAT_CP_ETCD_VERSION) in $state"
echo "  $nodes hollow nodes of kubestat-sim, their pods scheduled by kube-scheduler (logs: $work/sim.log, $state/logs)"
echo "kubestat, as the manifests' ServiceAccounts, behind the aggregation layer ($netns: $host):"
echo "  kubestat-aggregator  https://$host:$agg_port   metrics/v1alpha1 (v1alpha1.metrics)"
echo "  kubestat-apiserver   https://$host:$apiserver_port   metrics.k8s.io v1beta1 and v1, fed by kubestat-bridge"
echo "  logs                 $work/aggregator/log $work/apiserver/log $work/bridge.log"
echo
echo "Try (in another terminal; the release's kubectl, as the cluster's admin):"
echo "  export PATH=$KUBESTAT_CP_BIN:\$PATH KUBECONFIG=$KUBECONFIG"
echo "  $kc get nodes -o wide"
echo "  $kc get apiservices | grep metrics"
echo "  $kc top node"
echo "  $kc top pod -A"
echo "  $kc top pod -n shop -l tier=frontend --containers"
echo "  $kc top pod -n shop --sum"
echo "  $kc get --raw '/apis/metrics/v1alpha1/nodes/node-0000' | python3 -m json.tool | head -40   # the windows"
echo "  $kc get --raw '/apis/metrics/v1alpha1/namespaces/shop/recommendations' | python3 -m json.tool | head -40"
echo "  $kc get --raw '/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods?watch=1'   # ADDED, then MODIFIED each round"
echo "  $kc -n shop scale deployment web --replicas=4 && $kc top pod -n shop   # the new pods appear"
echo "  $kc -n shop annotate pods -l app=web kubestat.dev/cpu=2 --overwrite   # the hollow kubelets report 2 cpu"
echo "  $kv top pod -n shop   # allowed by a Role"
echo "  $kv top node          # Forbidden"
echo
echo "Ctrl-C stops everything. Scrape rounds:"
tail -n +1 -F "$work/aggregator/log" &
tail_pid=$!
wait "${pids[1]}"
