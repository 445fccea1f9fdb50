#!/usr/bin/env bash
# Runs kubestat on a simulated cluster on this machine: installs what is missing, builds
# kubestat-sim, kubestat-aggregator, kubestat-apiserver and kubestat-bridge, starts them on
# loopback over HTTPS (the simulated kube-apiserver proxies the metrics APIs to the
# aggregator, as the aggregation layer does, so kubectl top works; the bridge follows the
# aggregator's gRPC watch and pushes every object into the secondary API server), waits
# until both servers answer, prints the URLs and commands to try, then each scrape round's
# summary. Ctrl-C stops everything. Each simulated node also serves the kubelet's
# podresources socket, read by a kubestat-node-agent of its own (on the node's address),
# which the aggregator scrapes beside the kubelet: allocatable, utilization and exclusive
# cpus, NUMA memory and GPUs show in metrics/v1alpha1.
#
#   scripts/demo.sh [--nodes N] [--pods-per-node N] [--faults node-0003=timeout,...]
#                   [--resolution 10s] [--kubelet-timeout 5s] [--port 8443] [--grpc-port 8081]
#                   [--apiserver-port 8445] [--node-agents N] [--agent-port 10266]
#                   [--podresources-faults node-0005=no-allocatable,...]
# (the kubelet timeout must be shorter than the resolution; --node-agents 0 runs none)
#   scripts/demo.sh --control-plane [--nodes N] [--pods-per-node N] [--resolution 10s]
# runs controlplane/demo.sh instead: kubestat in front of a real Kubernetes control plane
# (built once, 10 to 25 minutes on two cores), with kubestat-sim's hollow nodes.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
for arg in "$@"; do
  if [[ "$arg" == --control-plane ]]; then
    args=()
    for a in "$@"; do [[ "$a" == --control-plane ]] || args+=("$a"); done
    exec "$root/controlplane/demo.sh" "${args[@]}"
  fi
done
build="${KUBESTAT_BUILD_DIR:-$root/build}"
nodes=50
pods=30
faults="-"  # default: node-0003 times out, node-0007 answers 500 (those of them that exist)
resolution=10s
timeout=5s
port=8443
grpc_port=8081
apiserver_port=8445
node_agents=""  # empty: one per node
agent_port=10266
podresources_faults="-"  # default: node-0005 (or the last node) has no GetAllocatableResources
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
    --apiserver-port) apiserver_port="$2"; shift 2 ;;
    --apiserver-port=*) apiserver_port="${1#*=}"; shift ;;
    --node-agents) node_agents="$2"; shift 2 ;;
    --node-agents=*) node_agents="${1#*=}"; shift ;;
    --agent-port) agent_port="$2"; shift 2 ;;
    --agent-port=*) agent_port="${1#*=}"; shift ;;
    --podresources-faults) podresources_faults="$2"; shift 2 ;;
    --podresources-faults=*) podresources_faults="${1#*=}"; shift ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "demo: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

"$root/scripts/install-deps.sh"
# The test script shares this build directory: configure it as it does, so neither undoes
# the other's cache (only the targets built differ).
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target kubestat-sim kubestat-aggregator kubestat-apiserver \
  kubestat-bridge kubestat-node-agent
node_agents=${node_agents:-$nodes}
((node_agents <= nodes)) || node_agents=$nodes
if [[ "$faults" == "-" ]]; then
  faults=""
  ((nodes > 3)) && faults="node-0003=timeout"
  ((nodes > 7)) && faults="$faults,node-0007=http500"
fi
if [[ "$podresources_faults" == "-" ]]; then
  podresources_faults=$(printf 'node-%04d=no-allocatable' $((nodes > 5 ? 5 : nodes - 1)))
fi

work="$(mktemp -d -t kubestat-demo-XXXXXX)"
sim_pid=""
agg_pid=""
apiserver_pid=""
bridge_pid=""
tail_pid=""
agent_pids=()
cleanup() {
  trap - INT TERM EXIT
  for pid in "$tail_pid" "$bridge_pid" "$apiserver_pid" "$agg_pid" "${agent_pids[@]}" "$sim_pid"; do
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid" 2>/dev/null || true; fi
  done
  for pid in "$bridge_pid" "$apiserver_pid" "$agg_pid" "${agent_pids[@]}" "$sim_pid"; do
    if [[ -n "$pid" ]]; then
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  echo "demo: stopped (logs in $work)"
}
trap cleanup INT TERM EXIT

# Who is who in the simulated cluster: an admin, the aggregator's service account, and a
# viewer allowed pod metrics in one namespace only (for a 403 to see). Tokens are made here
# and stay in $work (mode 0600); commands below read them from there.
umask 077
admin_token=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
aggregator_token=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
viewer_token=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
bridge_token=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
agent_token=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
printf '%s\n' "$admin_token" >"$work/admin.token"
printf '%s\n' "$bridge_token" >"$work/bridge.token"
printf '%s\n' "$aggregator_token" >"$work/aggregator.token"
printf '%s\n' "$viewer_token" >"$work/viewer.token"
cat >"$work/users.yaml" <<EOF
users:
- name: admin
  token: $admin_token
  groups: [system:masters]
- name: kubestat-aggregator
  token: $aggregator_token
  groups: [kubestat:aggregators]
- name: viewer
  token: $viewer_token
  groups: [shop-viewers]
- name: kubestat-bridge
  token: $bridge_token
  groups: [kubestat:bridges]
- name: kubestat-node-agent
  token: $agent_token
  groups: [kubestat:node-agents]
rules:
# The node agents: only the aggregator may read their documents; they review callers.
- groups: [kubestat:aggregators]
  verbs: [get]
  nonResourceURLs: [/podresources]
- groups: [kubestat:node-agents]
  verbs: [create]
  apiGroups: [authentication.k8s.io, authorization.k8s.io]
  resources: [tokenreviews, subjectaccessreviews]
- groups: [kubestat:bridges]
  verbs: [get, list, watch, create, update, delete]
  apiGroups: [metrics, metrics.k8s.io]
  resources: [nodes, pods, writes]
- groups: [kubestat:aggregators]
  verbs: [get, list, watch]
  apiGroups: [""]
  resources: [nodes, pods, limitranges]
# The front proxy's trust the cluster publishes (the Role extension-apiserver-authentication-reader).
- groups: [kubestat:aggregators]
  verbs: [get, list, watch]
  apiGroups: [""]
  resources: [configmaps]
  namespaces: [kube-system]
- groups: [kubestat:aggregators]
  verbs: [create]
  apiGroups: [authentication.k8s.io, authorization.k8s.io]
  resources: [tokenreviews, subjectaccessreviews]
- groups: [shop-viewers]
  verbs: [get, list]
  apiGroups: [metrics.k8s.io, metrics]
  resources: [pods]
  namespaces: [shop]
- groups: [system:authenticated]
  verbs: [get]
  nonResourceURLs: [/api, /api/*, /apis, /apis/*]
EOF
umask 022
mkdir -p "$work/kubeconfigs"

# The fake kube-apiserver serves HTTPS, authenticates every request by its token, and
# proxies the metrics groups to the aggregator over HTTPS with its front-proxy client
# certificate, as the aggregation layer does.
"$build/sim/kubestat-sim" --nodes="$nodes" --pods-per-node="$pods" \
  --kubelet-address-mode=loopback --kubelet-port=0 --faults="$faults" \
  --podresources-dir="$work/podres" --podresources-faults="$podresources_faults" \
  --users-file="$work/users.yaml" --apiserver-tls --tls-dir="$work/sim-tls" \
  --kubeconfig-dir="$work/kubeconfigs" --kubeconfig-out="$work/kubeconfig" \
  --metrics-backend="https://127.0.0.1:$port" \
  --metrics-backend-ca-file="$work/aggregator-certs/apiserver.crt" >"$work/sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 600); do
  grep -q READY "$work/sim.log" 2>/dev/null && break
  kill -0 "$sim_pid" 2>/dev/null || { cat "$work/sim.log"; exit 1; }
  sleep 0.1
done
grep -q READY "$work/sim.log" || { echo "demo: kubestat-sim did not start" >&2; exit 1; }

# One kubestat-node-agent per node, on the node's address (127.1.x.y, as the sim's loopback
# kubelets), reading that node's podresources socket. They share one serving certificate
# naming every node address, which the aggregator trusts; tokens and permissions are the
# cluster's (TokenReview, SubjectAccessReview), so only the aggregator reads them.
node_ip() { echo "127.1.$(($1 / 250)).$(($1 % 250 + 1))"; }
node_name() { printf 'node-%04d' "$1"; }
if ((node_agents > 0)); then
  sans="IP:127.0.0.1"
  for ((i = 0; i < node_agents; i++)); do sans="$sans,IP:$(node_ip "$i")"; done
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj /CN=kubestat-node-agent -addext "subjectAltName=$sans" \
    -keyout "$work/agent.key" -out "$work/agent.crt" 2>/dev/null
  mkdir -p "$work/agents"
  for ((i = 0; i < node_agents; i++)); do
    node=$(node_name "$i")
    "$build/agent/kubestat-node-agent" --node-name="$node" \
      --podresources-socket="$work/podres/$node/kubelet.sock" --resolution="$resolution" \
      --call-timeout=1s \
      --listen-address="$(node_ip "$i")" --secure-port="$agent_port" \
      --tls-cert-file="$work/agent.crt" --tls-private-key-file="$work/agent.key" \
      --authentication-kubeconfig="$work/kubeconfigs/kubestat-node-agent.kubeconfig" \
      --authorization-kubeconfig="$work/kubeconfigs/kubestat-node-agent.kubeconfig" \
      >"$work/agents/$node.log" 2>&1 &
    agent_pids+=($!)
  done
  agent_flags=(--node-agent-port="$agent_port" --node-agent-certificate-authority="$work/agent.crt"
    --node-agent-token-file="$work/aggregator.token")
else
  agent_flags=()
fi

# The aggregator: HTTPS with a self-signed pair, the proxy believed by its certificate (its
# CA and name read from the cluster's kube-system/extension-apiserver-authentication, as in a
# real cluster), tokens and permissions reviewed by the cluster (TokenReview,
# SubjectAccessReview).
agg_kubeconfig="$work/kubeconfigs/kubestat-aggregator.kubeconfig"
"$build/aggregator/kubestat-aggregator" --kubeconfig="$agg_kubeconfig" \
  --kubelet-scheme=http --kubelet-preferred-address-types=InternalIP \
  --kubelet-use-node-status-port --metric-resolution="$resolution" --kubelet-timeout="$timeout" \
  --listen-address=127.0.0.1 --secure-port="$port" --cert-dir="$work/aggregator-certs" \
  --authentication-kubeconfig="$agg_kubeconfig" --authorization-kubeconfig="$agg_kubeconfig" \
  --scrape-dump="$work/scrapes.jsonl" "${agent_flags[@]}" \
  --grpc-address=127.0.0.1 --grpc-port="$grpc_port" --storage-dir="$work/store" \
  >"$work/aggregator.log" 2>&1 &
agg_pid=$!
ready=0
for _ in $(seq 600); do
  kill -0 "$agg_pid" 2>/dev/null || break
  if curl -fs --cacert "$work/aggregator-certs/apiserver.crt" "https://127.0.0.1:$port/readyz" \
    >/dev/null 2>&1 &&
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
# The secondary API server holds what the bridge pushes; it reviews tokens and permissions
# with the cluster as the aggregator does. The bridge follows the aggregator's gRPC watch.
"$build/apiserver/kubestat-apiserver" --listen-address=127.0.0.1 --secure-port="$apiserver_port" \
  --cert-dir="$work/apiserver-certs" \
  --authentication-kubeconfig="$agg_kubeconfig" --authorization-kubeconfig="$agg_kubeconfig" \
  >"$work/apiserver.log" 2>&1 &
apiserver_pid=$!
for _ in $(seq 100); do
  [[ -f "$work/apiserver-certs/apiserver.crt" ]] && grep -q "serving on" "$work/apiserver.log" && break
  kill -0 "$apiserver_pid" 2>/dev/null || { cat "$work/apiserver.log"; exit 1; }
  sleep 0.1
done
"$build/bridge/kubestat-bridge" --aggregator-address="127.0.0.1:$grpc_port" \
  --aggregator-token-file="$work/bridge.token" \
  --apiserver-url="https://127.0.0.1:$apiserver_port" \
  --apiserver-ca-file="$work/apiserver-certs/apiserver.crt" \
  --apiserver-token-file="$work/bridge.token" --listen-address=127.0.0.1 --secure-port=0 \
  --cert-dir="$work/bridge-certs" \
  --authentication-kubeconfig="$agg_kubeconfig" --authorization-kubeconfig="$agg_kubeconfig" \
  >"$work/bridge.log" 2>&1 &
bridge_pid=$!
for _ in $(seq 300); do
  grep -q "resync:" "$work/bridge.log" 2>/dev/null && break
  kill -0 "$bridge_pid" 2>/dev/null || { cat "$work/bridge.log"; exit 1; }
  sleep 0.1
done

# A namespace, app and tier to suggest, from the first pod served (cpu needs two scrapes, so
# pods are served from round 2 on).
ca="--cacert $work/aggregator-certs/apiserver.crt"
bearer="Authorization: Bearer \$(cat $work/admin.token)"
first_pod=$( (curl -fs $ca -H "Authorization: Bearer $admin_token" \
  "https://127.0.0.1:$port/apis/metrics.k8s.io/v1beta1/pods" || true) | head -c 4096)
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
echo "aggregator (HTTPS REST on :$port, gRPC kubestat.v1.Aggregator on 127.0.0.1:$grpc_port):"
echo "  metrics    https://127.0.0.1:$port/metrics (needs a user allowed to get /metrics)"
echo "  health     https://127.0.0.1:$port/healthz  /livez  /readyz (open to probes)"
echo "  store      $work/store"
echo "  scrapes    $work/scrapes.jsonl (one JSON line per node scrape)"
echo "  users      $work/users.yaml (admin, kubestat-aggregator, kubestat-bridge, viewer: pods in shop only)"
echo "secondary API server (HTTPS on :$apiserver_port, fed by kubestat-bridge; logs apiserver.log, bridge.log):"
echo
echo "Try (in another terminal):"
echo "  $kc top node"
echo "  $kc top pod -A"
echo "  $kc top pod -n $ns -l app=$app"
echo "  $kc get --raw /apis/metrics.k8s.io/v1beta1/nodes"
echo "  $kc get --raw '/apis/metrics/v1alpha1/namespaces/shop/recommendations?pretty=true'   # requests and limits the LimitRange admits"
echo "  kubectl --kubeconfig=$work/kubeconfigs/viewer.kubeconfig top pod -n shop   # allowed"
echo "  kubectl --kubeconfig=$work/kubeconfigs/viewer.kubeconfig top node         # Forbidden"
echo "  curl $ca -H \"$bearer\" 'https://127.0.0.1:$port/apis/metrics/v1alpha1/namespaces/$ns/pods?pretty=true'"
echo "  curl $ca -H \"$bearer\" 'https://127.0.0.1:$port/apis/metrics/v1alpha1/nodes/node-0000?pretty=true'"
echo "  curl $ca -H \"$bearer\" 'https://127.0.0.1:$port/apis/metrics.k8s.io/v1beta1/namespaces/$ns/pods?labelSelector=tier%3D$tier'"
echo "  curl $ca 'https://127.0.0.1:$port/apis/metrics.k8s.io/v1beta1/nodes'   # 401: no token"
if ((node_agents > 0)); then
  echo "node agents ($node_agents, one per node on 127.1.x.y:$agent_port; logs in $work/agents), podresources faults: ${podresources_faults:-none}:"
  echo "  curl $ca -H \"$bearer\" 'https://127.0.0.1:$port/apis/metrics/v1alpha1/nodes/node-0000?pretty=true'   # allocatable, utilization, podResources"
  echo "  curl $ca -H \"$bearer\" 'https://127.0.0.1:$port/apis/metrics/v1alpha1/pods?pretty=true' | grep -B3 -A12 '\"exclusive\"'   # pinned cpus, NUMA memory, GPUs"
  echo "  curl --cacert $work/agent.crt -H \"Authorization: Bearer \$(cat $work/aggregator.token)\" 'https://$(node_ip 0):$agent_port/podresources?pretty=true'   # an agent, as the aggregator reads it"
  echo "  curl --cacert $work/agent.crt -H \"Authorization: Bearer \$(cat $work/viewer.token)\" 'https://$(node_ip 0):$agent_port/podresources'   # 403: the viewer may not (401 without a token)"
  # What they show now: each node's podResources state and allocatable cpu.
  states=$( (curl -fs $ca -H "Authorization: Bearer $admin_token" \
    "https://127.0.0.1:$port/apis/metrics/v1alpha1/nodes" || true) |
    grep -o '"name":"node-[0-9]*"\|"allocatable":{"cpu":"[^"]*"\|"state":"[^"]*"' |
    sed 's/"name":"\(.*\)"/\1/; s/"allocatable":{"cpu":"\(.*\)"/allocatable cpu \1/; s/"state":"\(.*\)"/\1/' |
    paste -sd' ' | sed 's/ node-/\nnode-/g' | head -n 8)
  echo "$states" | sed 's/^/  now: /'
fi
aca="--cacert $work/apiserver-certs/apiserver.crt"
echo "  curl $aca -H \"$bearer\" 'https://127.0.0.1:$apiserver_port/apis/metrics.k8s.io/v1beta1/namespaces/$ns/pods'"
echo "  curl $aca -H \"$bearer\" 'https://127.0.0.1:$apiserver_port/apis/metrics/v1alpha1/nodes?limit=5'"
echo "  curl -N $aca -H \"$bearer\" 'https://127.0.0.1:$apiserver_port/apis/metrics/v1alpha1/namespaces/$ns/pods?watch=1'   # ADDED, then MODIFIED each round"
echo
echo "Ctrl-C stops everything. Scrape rounds:"
tail -n +1 -F "$work/aggregator.log" &
tail_pid=$!
wait "$agg_pid"
