#!/usr/bin/env bash
# Checks the real Kubernetes control plane of controlplane/ (ctest kubestat_controlplane_test,
# labels controlplane and integration).
#
# Builds it (or reuses build.sh's cache), starts it in a temporary directory with
# controlplane/start.sh, and checks, with the kubectl of the same release:
#   1. `kubectl version` reports the release for both client and server;
#   2. a Deployment gets its ReplicaSet and pods from the controller-manager, and the scheduler
#      binds the pods to a Node object created here (spec.nodeName; no kubelet runs them);
#   3. the HPA controller syncs an autoscaling/v2 HPA (sets its conditions), the garbage
#      collector deletes a dependent whose owner is gone, the namespace controller removes a
#      deleted namespace;
#   4. TokenRequest: `kubectl create token` for the namespace's default ServiceAccount (made by
#      the serviceaccount controller) gives a token the API server authenticates as that
#      account; the serviceaccount-token controller fills a service-account-token Secret;
#   5. a LimitRange with Container cpu max 1 refuses a pod asking for 2 cpu, naming that
#      constraint, and admits one asking for 500m;
#   6. every overlay in manifests/overlays/* (rendered with `kubectl kustomize`), and
#      gen-certs.sh's overlay, is accepted by
#      `kubectl apply --server-side`, after the CRDs of crds.txt (cert-manager's, the
#      Prometheus Operator's); each refusal is printed with the API server's message;
#   7. kubestat-sim ($KUBESTAT_SIM_BINARY) as hollow nodes: three Nodes registered in the real
#      API server, kept Ready by their renewed Leases, the model's workloads made real
#      Deployments and DaemonSets whose pods the scheduler binds there and the hollow kubelets
#      report Running (a scale-up and a deletion followed), their kubelets answering at the
#      ports the Nodes name;
#   8. kubestat-aggregator ($KUBESTAT_AGGREGATOR_BINARY), run with a TokenRequest token of the
#      manifests' ServiceAccount and no front-proxy flag, believes the front proxy's certificate
#      from kube-system/extension-apiserver-authentication (and the cluster CA's client
#      certificates), refuses forged headers, serves the hollow nodes' usage, follows a username
#      header added to the ConfigMap, and is refused nothing it asks of the API server; it
#      listens on an address of a veth pair the test makes (Kubernetes refuses loopback
#      endpoints), with a serving certificate naming the Service of check 9;
#   8b. kubestat-bridge ($KUBESTAT_BRIDGE_BINARY) beside it as kubestat-aggregator pushes into
#      kubestat-apiserver ($KUBESTAT_APISERVER_BINARY) run as kubestat-apiserver, and a node agent
#      ($KUBESTAT_NODE_AGENT_BINARY) run as kubestat-node-agent serves node-0000's podresources
#      to the kubestat-node-agent-reader token only (403 to the aggregator's, 401 without);
#      none of them is refused anything by the real RBAC;
#   9. as root: the APIServices pointed at that Service (an EndpointSlice of the veth address)
#      are Available, and through the real aggregation layer `kubectl top node`, `top pod -n`,
#      `-A` (every running hollow pod by namespace and name), `-l`, `--sum` (the total within
#      rounding of the rows' sum) and `--containers`, and `get --raw
#      /apis/metrics/v1alpha1/nodes` show the hollow nodes' real pods; the real RBAC lets a user
#      bound to a Role read pods' metrics in its namespace only (403 for nodes and other
#      namespaces) and an unknown token gets 401; an autoscaling/v2 HPA on shop/web scales it up
#      when the hollow kubelets report 4 cpu per pod and down when they report 10m (times
#      printed); in a namespace with seed 003's LimitRange, the recommendation for a pod using 2
#      cpu is fitted into it, admitted when applied, and its wanted values are refused naming
#      each constraint boundBy named; etcd compacted to its head and kube-apiserver restarted
#      mid-run: the aggregator's watches are answered 410, it lists again (its
#      kubestat_discovery_relists_after_gone_total grows) and it and the hollow nodes follow
#      without a restart of their own; a Node deleted stops being served and, created again,
#      is served; then, as the manifests deploy it, the APIServices pointed at
#      kubestat-apiserver: the same kubectl top checks again, and a watch of metrics/v1alpha1
#      pods through the aggregation layer (ADDED, then MODIFIED);
# then stops everything (trap), also on failure or interrupt. Each check reports ok or FAIL;
# the test fails if any fails. It waits only by polling a condition with a deadline.
#
# Usage: tests/controlplane/control_plane_test.sh [--keep]
#   --keep  leave the state directory (logs, kubeconfig) for a look, print its path
# Environment: KUBESTAT_SIM_BINARY (check 7), KUBESTAT_AGGREGATOR_BINARY (check 8), KUBESTAT_BRIDGE_BINARY,
#   KUBESTAT_APISERVER_BINARY, KUBESTAT_NODE_AGENT_BINARY (check 8b), KUBESTAT_CACHE (build.sh's cache), TMPDIR,
#   GOPROXY (the CRDs' modules),
#   KUBESTAT_CONTROLPLANE_DEADLINE: seconds each condition is polled for (default: 120).
# Exit status: 0 all checks passed; 1 a check failed; 77 (skip) when go is not installed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
keep=0
for arg in "$@"; do
  case "$arg" in
    --keep) keep=1 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "control_plane_test.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

if ! command -v go >/dev/null; then
  echo "SKIP: go is not installed (controlplane/build.sh and the CRDs of crds.txt need it)"
  exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/kubestat-controlplane-test.XXXXXX")
state=$work/state
cleanup() {
  local status=$?
  if (( status != 0 )) && [[ -d "$state/logs" ]]; then
    for log in "$state"/logs/*.log; do
      echo "--- the end of $log"
      tail -n 15 "$log"
    done
  fi
  if [[ -n "${agg_pid:-}" ]]; then kill "$agg_pid" 2>/dev/null || true; fi
  if [[ -n "${hollow_pid:-}" ]]; then kill "$hollow_pid" 2>/dev/null || true; fi
  for pid in ${agent_pid:-} ${bridge_pid:-} ${apiserver_pid:-}; do kill "$pid" 2>/dev/null || true; done
  if [[ -n "${netns:-}" ]]; then kubestat_veth_down "$netns"; fi
  "$root/controlplane/start.sh" stop "$state" || true
  if (( keep )); then echo "state kept in $state"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

deadline=${KUBESTAT_CONTROLPLANE_DEADLINE:-120}
failures=()
ok() { echo "ok   $1"; }
fail() { echo "FAIL $1"; failures+=("$1"); }

# Polls "$@" until it succeeds, for at most $deadline seconds.
poll() {
  local end=$((SECONDS + deadline))
  until "$@"; do
    (( SECONDS < end )) || return 1
    sleep 0.5
  done
}

started=$SECONDS
bin=$("$root/controlplane/build.sh")
echo "control plane binaries in $bin ($((SECONDS - started))s)"
started=$SECONDS
"$root/controlplane/start.sh" --bin "$bin" "$state"
echo "started in $((SECONDS - started))s"
# shellcheck source=/dev/null
source "$state/control-plane.env"
export KUBECONFIG
# shellcheck source=controlplane/kubestat.sh
source "$root/controlplane/kubestat.sh"
kubectl() { "$KUBESTAT_CP_KUBECTL" "$@"; }

# --- 1. kubectl version ------------------------------------------------------------------------
version_json=$(kubectl version -o json)
versions=$(python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["clientVersion"]["gitVersion"], v["serverVersion"]["gitVersion"])' <<<"$version_json")
if [[ "$versions" == "$KUBESTAT_CP_VERSION $KUBESTAT_CP_VERSION" ]]; then
  ok "kubectl version: client and server $KUBESTAT_CP_VERSION"
else
  fail "kubectl version: client and server are '$versions', expected $KUBESTAT_CP_VERSION"
fi

ns=kubestat-cp-test
kubectl create namespace "$ns" >/dev/null

# --- 2. Deployment: controller-manager and scheduler ------------------------------------------
# A Node object with room for pods; no kubelet heartbeats it, so its pods tolerate the
# not-ready and unreachable taints the API server and the node lifecycle controller give it.
kubectl apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: kubestat-cp-node-0
  labels: {kubernetes.io/hostname: kubestat-cp-node-0, kubernetes.io/os: linux}
status:
  capacity: {cpu: "8", memory: 32Gi, pods: "110"}
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
EOF
kubectl -n "$ns" apply -f - >/dev/null <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      tolerations:
      - {key: node.kubernetes.io/not-ready, operator: Exists}
      - {key: node.kubernetes.io/unreachable, operator: Exists}
      containers:
      - name: app
        image: registry.invalid/kubestat/web:1
        resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 200m, memory: 128Mi}}
EOF
bound_pods() {
  kubectl -n "$ns" get pods -l app=web \
    -o jsonpath='{range .items[*]}{.metadata.ownerReferences[0].kind}/{.spec.nodeName}{"\n"}{end}' |
    grep -c '^ReplicaSet/kubestat-cp-node-0$'
}
two_pods_bound() { [[ "$(bound_pods)" == 2 ]]; }
if poll two_pods_bound; then
  ok "deployment: 2 pods created by its ReplicaSet and bound to kubestat-cp-node-0"
else
  fail "deployment: pods not created and bound within ${deadline}s: $(kubectl -n "$ns" get deploy,rs,pods -o wide 2>&1)"
fi

# --- 3. HPA, garbage collector, namespace controllers -------------------------------------
kubectl -n "$ns" apply -f - >/dev/null <<'EOF'
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 4
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
EOF
# No metrics API is registered here: the HPA controller reports it cannot read cpu.
hpa_synced() {
  [[ "$(kubectl -n "$ns" get hpa web -o jsonpath='{.status.conditions[?(@.type=="AbleToScale")].status}')" == True ]]
}
if poll hpa_synced; then
  ok "hpa: synced by the controller ($(kubectl -n "$ns" get hpa web -o jsonpath='{.status.conditions[?(@.type=="ScalingActive")].reason}'))"
else
  fail "hpa: no conditions within ${deadline}s: $(kubectl -n "$ns" get hpa web -o yaml 2>&1)"
fi

kubectl -n "$ns" create configmap owner >/dev/null
owner_uid=$(kubectl -n "$ns" get configmap owner -o jsonpath='{.metadata.uid}')
kubectl -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: dependent
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: $owner_uid}]
EOF
kubectl -n "$ns" delete configmap owner --wait=false >/dev/null
gone() { ! kubectl get "$@" >/dev/null 2>&1; }
if poll gone -n "$ns" configmap dependent; then
  ok "garbage collector: the dependent of a deleted owner is deleted"
else
  fail "garbage collector: configmap dependent still there ${deadline}s after its owner's deletion"
fi

kubectl create namespace kubestat-cp-doomed >/dev/null
kubectl -n kubestat-cp-doomed create configmap content >/dev/null
kubectl delete namespace kubestat-cp-doomed --wait=false >/dev/null
if poll gone namespace kubestat-cp-doomed; then
  ok "namespace controller: a deleted namespace and its content are removed"
else
  fail "namespace controller: namespace kubestat-cp-doomed still there after ${deadline}s"
fi

# --- 4. service accounts and TokenRequest ------------------------------------------------------
if poll kubectl -n "$ns" get serviceaccount default -o name >/dev/null 2>&1; then
  token=$(kubectl -n "$ns" create token default --duration=10m)
  whoami=$(kubectl --kubeconfig=/dev/null --server="$KUBESTAT_CP_SERVER" \
    --certificate-authority="$KUBESTAT_CP_PKI/ca.crt" --token="$token" \
    auth whoami -o jsonpath='{.status.userInfo.username}' 2>&1 || true)
  if [[ "$whoami" == "system:serviceaccount:$ns:default" ]]; then
    ok "tokenrequest: kubectl create token gives a token the API server takes as $whoami"
  else
    fail "tokenrequest: the token authenticates as '$whoami'"
  fi
else
  fail "serviceaccount controller: no default ServiceAccount in $ns within ${deadline}s"
fi
kubectl -n "$ns" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Secret
metadata:
  name: default-token
  annotations: {kubernetes.io/service-account.name: default}
type: kubernetes.io/service-account-token
EOF
secret_filled() { [[ -n "$(kubectl -n "$ns" get secret default-token -o jsonpath='{.data.token}')" ]]; }
if poll secret_filled; then
  ok "serviceaccount-token controller: the service-account-token Secret holds a token"
else
  fail "serviceaccount-token controller: secret default-token has no token after ${deadline}s"
fi

# --- 5. LimitRanger ----------------------------------------------------------------------------
kubectl -n "$ns" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: LimitRange
metadata:
  name: cpu-max-1
spec:
  limits:
  - type: Container
    max: {cpu: "1"}
EOF
pod_asking() {  # name, cpu
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
spec:
  containers:
  - name: app
    image: registry.invalid/kubestat/web:1
    resources: {requests: {cpu: "$2"}, limits: {cpu: "$2"}}
EOF
}
if refusal=$(pod_asking greedy 2 | kubectl -n "$ns" create -f - 2>&1); then
  fail "limitranger: a pod asking for 2 cpu was admitted under cpu max 1"
elif [[ "$refusal" == *"maximum cpu usage per Container is 1, but limit is 2"* ]]; then
  ok "limitranger: 2 cpu refused: ${refusal#Error from server (Forbidden): error when creating \"STDIN\": }"
else
  fail "limitranger: refused, but not naming the cpu max: $refusal"
fi
if admitted=$(pod_asking modest 500m | kubectl -n "$ns" create --dry-run=server -f - 2>&1); then
  ok "limitranger: 500m admitted ($admitted)"
else
  fail "limitranger: a pod asking for 500m was refused: $admitted"
fi

# --- 6. the manifests --------------------------------------------------------------------------
# Last: their APIServices have no backend here, and an unavailable aggregated API stalls the
# namespace controller's deletions (incomplete discovery), which check 3 would then see.
# The custom resources the overlays use (cert-manager's Certificate and Issuer, the Prometheus
# Operator's ServiceMonitor) are checked against their projects' own CRDs, as installed
# beforehand in a cluster that runs them: crds.txt names each CRD file in its Go module.
crds_ok=1
while read -r module file; do
  [[ -z "$module" || "$module" == \#* ]] && continue
  dir=$(cd "$work" && go mod download -json "$module" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  if [[ -z "$dir" || ! -f "$dir/$file" ]] ||
     ! kubectl apply --server-side -f "$dir/$file" > "$work/crd.log" 2>&1; then
    fail "manifests: CRD $module $file not installed: $(cat "$work/crd.log" 2>/dev/null)"
    crds_ok=0
  fi
done < "$root/tests/controlplane/crds.txt"
if (( crds_ok )); then
  kubectl wait --for=condition=Established --timeout="${deadline}s" crd --all >/dev/null
  ok "manifests: the CRDs of crds.txt installed and established"
fi
# One field manager for every overlay, so each apply takes over the base's objects as an
# operator switching overlays would (no conflicts between managers).
apply_rendered() {  # label, directory
  local out
  if ! kubectl kustomize "$2" > "$work/rendered.yaml" 2> "$work/kustomize.err"; then
    fail "manifests: kubectl kustomize $1: $(<"$work/kustomize.err")"
    return
  fi
  if out=$(kubectl apply --server-side --field-manager=kubestat-controlplane-test \
             -f "$work/rendered.yaml" 2>&1); then
    ok "manifests: $1 accepted ($(grep -c 'serverside-applied' <<<"$out") objects)"
  else
    fail "manifests: $1 refused by the API server:"$'\n'"$(grep -v 'serverside-applied$' <<<"$out" | sed 's/^/       /')"
  fi
}
for overlay in "$root"/manifests/overlays/*/; do
  overlay=${overlay%/}
  apply_rendered "overlays/${overlay##*/}" "$overlay"
done
# manifests/README.md's way without cert-manager: gen-certs.sh over overlays/metrics-server.
if "$root/manifests/gen-certs.sh" -b "$root/manifests/overlays/metrics-server" \
     "$work/kubestat-certs" > "$work/gen-certs.log" 2>&1; then
  apply_rendered "gen-certs.sh over overlays/metrics-server" "$work/kubestat-certs"
else
  fail "manifests: gen-certs.sh: $(cat "$work/gen-certs.log" 2>/dev/null)"
fi

# --- 7. hollow nodes ---------------------------------------------------------------------------
# kubestat-sim fakes no API server here: it registers three nodes in the real one (Nodes whose
# addresses and kubelet ports are its kubelets', and Leases it renews) and serves their
# kubelets. The node lifecycle controller must keep them Ready, and the aggregator of check 8
# scrapes them.
hollow_pid=""
if [[ -z "${KUBESTAT_SIM_BINARY:-}" || ! -x "$KUBESTAT_SIM_BINARY" ]]; then
  fail "hollow nodes: KUBESTAT_SIM_BINARY names no binary ('${KUBESTAT_SIM_BINARY:-}')"
else
  "$KUBESTAT_SIM_BINARY" --nodes=3 --pods-per-node=4 --seed=7 --kubelet-address-mode=ports \
    --kubelet-port=0 --hollow-apiserver="$KUBESTAT_CP_SERVER" \
    --hollow-ca-file="$KUBESTAT_CP_PKI/ca.crt" \
    --hollow-client-cert-file="$KUBESTAT_CP_PKI/admin.crt" \
    --hollow-client-key-file="$KUBESTAT_CP_PKI/admin.key" \
    --hollow-lease-renew-interval=2s --podresources-dir="$work/podres" > "$work/hollow.log" 2>&1 &
  hollow_pid=$!
  hollow_names=(node-0000 node-0001 node-0002)
  hollow_ready() {
    local name
    for name in "${hollow_names[@]}"; do
      [[ "$(kubectl get node "$name" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]] || return 1
    done
  }
  if poll hollow_ready; then
    ok "hollow nodes: ${hollow_names[*]} registered by kubestat-sim and Ready"
  else
    fail "hollow nodes: not all Ready: $(kubectl get nodes 2>&1 | tr '\n' ';') $(tail -n 5 "$work/hollow.log")"
  fi
  renewed_before=$(kubectl -n kube-node-lease get lease node-0000 -o jsonpath='{.spec.renewTime}' 2>/dev/null || true)
  lease_renewed() {
    local now
    now=$(kubectl -n kube-node-lease get lease node-0000 -o jsonpath='{.spec.renewTime}' 2>/dev/null) || return 1
    [[ -n "$now" && "$now" != "$renewed_before" ]]
  }
  if [[ -n "$renewed_before" ]] && poll lease_renewed; then
    ok "hollow nodes: their Leases are renewed (node-0000: $renewed_before, then later)"
  else
    fail "hollow nodes: node-0000's Lease is not renewed ('$renewed_before')"
  fi
  # The seeded workloads, made real: 3 nodes x 4 pods, 2 of each node's from DaemonSets.
  hollow_pods_running() {
    local phases
    phases=$(kubectl get pods -A -l kubestat.dev/hollow=true \
      -o jsonpath='{range .items[*]}{.spec.nodeName}/{.status.phase}/{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null) || return 1
    [[ $(grep -c '^node-000[0-2]/Running/True$' <<<"$phases") == 12 && $(wc -l <<<"$phases") == 12 ]]
  }
  if poll hollow_pods_running; then
    ok "hollow nodes: the model's Deployments and DaemonSets made real, their 12 pods scheduled there and reported Running and Ready"
  else
    fail "hollow nodes: their pods: $(kubectl get pods -A -l kubestat.dev/hollow=true -o wide 2>&1 | tail -n +2 | tr -s ' ' | tr '\n' ';')"
  fi
  # Followed: a scale-up's new pod runs, a deleted pod is replaced, a deletion with a grace
  # period ends (the hollow kubelet confirms it).
  kubectl -n shop scale deployment web --replicas=3 >/dev/null 2>&1 || true
  victim=$(kubectl -n monitoring get pods -l app=node-exporter -o jsonpath='{.items[0].metadata.name}' 2>/dev/null || true)
  [[ -n "$victim" ]] && kubectl -n monitoring delete pod "$victim" --grace-period=30 --wait=false >/dev/null
  followed_changes() {
    [[ "$(kubectl -n shop get deployment web -o jsonpath='{.status.readyReplicas}')" == 3 ]] &&
      ! kubectl -n monitoring get pod "$victim" >/dev/null 2>&1 &&
      [[ "$(kubectl -n monitoring get daemonset node-exporter -o jsonpath='{.status.numberReady}')" == 3 ]]
  }
  if [[ -n "$victim" ]] && poll followed_changes; then
    ok "hollow nodes: a scale-up's pods run, and a pod deleted with a grace period is gone and replaced"
  else
    fail "hollow nodes: changes not followed: web ready $(kubectl -n shop get deployment web -o jsonpath='{.status.readyReplicas}'), $victim: $(kubectl -n monitoring get pod "$victim" 2>&1 | tail -1)"
  fi
  port_0=$(kubectl get node node-0000 -o jsonpath='{.status.daemonEndpoints.kubeletEndpoint.Port}')
  if curl -sf --max-time 5 "http://127.0.0.1:$port_0/stats/summary" | grep -q '"nodeName":"node-0000"'; then
    ok "hollow nodes: node-0000's kubelet answers at the port its Node names ($port_0)"
  else
    fail "hollow nodes: no summary from node-0000's kubelet at port '$port_0'"
  fi
fi

# --- the aggregator's own address --------------------------------------------------------------
# Kubernetes refuses loopback addresses in EndpointSlices, so the aggregation layer can reach
# a kubestat process only at another address: this test makes a veth pair, one end here with
# 10.254.N.1, the other in a network namespace of its own with 10.254.N.2, and the aggregator
# listens on 10.254.N.1 (as root; without root it listens on 127.0.0.1 and check 9 is skipped).
# Its serving certificate names the Service the APIServices will point at.
agg_host=127.0.0.1
netns=""
if (( EUID == 0 )) && command -v ip >/dev/null; then
  netns=kubestat-cp-$$
  if ! agg_host=$(kubestat_veth_up "$netns"); then
    # A machine that refuses network namespaces leaves check 9 out (it says so below).
    echo "skip the veth pair: ip refused it ($(ip netns add "$netns-probe" 2>&1; ip netns del "$netns-probe" 2>/dev/null))"
    agg_host=127.0.0.1
    netns=""
  fi
fi
agg_certs=$work/aggregator-serving
kubestat_serving_pair "$agg_certs" kubestat-aggregator \
  "DNS:kubestat-aggregator-cp.kubestat.svc,IP:$agg_host,IP:127.0.0.1"
apiserver_certs=$work/apiserver-serving
kubestat_serving_pair "$apiserver_certs" kubestat-apiserver \
  "DNS:kubestat-apiserver-cp.kubestat.svc,IP:$agg_host,IP:127.0.0.1"

# --- 8. the aggregator as its ServiceAccount, with the cluster's trust -------------------------
# The manifests applied above made the ServiceAccount kubestat/kubestat-aggregator and its
# RBAC. The aggregator runs here with a token of that account (TokenRequest) and no
# --client-ca-file or --requestheader-* flag: it must read the client CA and the front
# proxy's CA, names and headers from kube-system/extension-apiserver-authentication, and
# follow the ConfigMap when it changes. Every request it makes is the account's: a
# permission the ClusterRoles lack shows as a 403 in its log.
if [[ -z "${KUBESTAT_AGGREGATOR_BINARY:-}" || ! -x "$KUBESTAT_AGGREGATOR_BINARY" ]]; then
  fail "aggregator: KUBESTAT_AGGREGATOR_BINARY names no binary ('${KUBESTAT_AGGREGATOR_BINARY:-}')"
else
  agg=$work/aggregator
  mkdir -p "$agg"
  kubestat_account_kubeconfig "$agg" kubestat kubestat-aggregator
  agg_port=$(kubestat_free_port)
  grpc_port=$(kubestat_free_port)
  "$KUBESTAT_AGGREGATOR_BINARY" --kubeconfig="$agg/kubeconfig" \
    --authentication-kubeconfig="$agg/kubeconfig" --authorization-kubeconfig="$agg/kubeconfig" \
    --listen-address="$agg_host" --secure-port="$agg_port" --cert-dir="$agg/certs" \
    --tls-cert-file="$agg_certs/tls.crt" --tls-private-key-file="$agg_certs/tls.key" \
    --grpc-address=127.0.0.1 --grpc-port="$grpc_port" --storage-dir="$agg/store" --metric-resolution=2s --kubelet-timeout=1s \
    --kubelet-scheme=http --kubelet-preferred-address-types=InternalIP \
    --kubelet-use-node-status-port > "$agg/log" 2>&1 &
  agg_pid=$!
  # GET as the front proxy: its client certificate, the user in header $1.
  as_proxy() {
    curl -sk -o /dev/null -w '%{http_code}' --max-time 10 \
      --cert "$KUBESTAT_CP_PKI/front-proxy-client.crt" --key "$KUBESTAT_CP_PKI/front-proxy-client.key" \
      -H "$1: kubestat-admin" -H "X-Remote-Group: system:masters" \
      "https://$agg_host:$agg_port/apis/metrics.k8s.io/v1beta1/nodes" || true
  }
  proxied_ok() { [[ "$(as_proxy X-Remote-User)" == 200 ]]; }
  if poll proxied_ok; then
    ok "aggregator: the front proxy's certificate believed from the cluster's ConfigMap, its user authorized by SubjectAccessReview (200)"
  else
    fail "aggregator: the front proxy was not believed ($(as_proxy X-Remote-User)): $(tail -n 5 "$agg/log")"
  fi
  if cmp -s "$agg/certs/cluster-trust/requestheader-client-ca.crt" "$KUBESTAT_CP_PKI/front-proxy-ca.crt" &&
     cmp -s "$agg/certs/cluster-trust/client-ca.crt" "$KUBESTAT_CP_PKI/ca.crt"; then
    ok "aggregator: keeps the ConfigMap's front-proxy CA and client CA as published"
  else
    fail "aggregator: the CAs it keeps differ from the cluster's"
  fi
  # The client CA from the ConfigMap: the admin's certificate names the admin.
  admin_code=$(curl -sk -o /dev/null -w '%{http_code}' --max-time 10 \
    --cert "$KUBESTAT_CP_PKI/admin.crt" --key "$KUBESTAT_CP_PKI/admin.key" \
    "https://$agg_host:$agg_port/apis/metrics.k8s.io/v1beta1/nodes" || true)
  forged_code=$(curl -sk -o /dev/null -w '%{http_code}' --max-time 10 \
    -H "X-Remote-User: kubestat-admin" -H "X-Remote-Group: system:masters" \
    "https://$agg_host:$agg_port/apis/metrics.k8s.io/v1beta1/nodes" || true)
  if [[ "$admin_code" == 200 && "$forged_code" == 401 ]]; then
    ok "aggregator: a client certificate of the cluster CA authenticates (200); forged headers without the proxy's certificate do not (401)"
  else
    fail "aggregator: client certificate $admin_code (want 200), forged headers $forged_code (want 401)"
  fi
  # The hollow nodes of check 7, found by the real list+watch and scraped.
  admin_get() {
    curl -sk --max-time 10 --cert "$KUBESTAT_CP_PKI/admin.crt" --key "$KUBESTAT_CP_PKI/admin.key" \
      "https://$agg_host:$agg_port$1" || true
  }
  hollow_served() {
    local body
    body=$(admin_get /apis/metrics.k8s.io/v1beta1/nodes)
    for name in node-0000 node-0001 node-0002; do
      [[ "$body" == *"\"name\":\"$name\""* ]] || return 1
    done
  }
  if [[ -n "$hollow_pid" ]] && poll hollow_served; then
    ok "aggregator: the hollow nodes' usage served ($(admin_get /apis/metrics.k8s.io/v1beta1/nodes | grep -o '"name":"node-[0-9]*"' | tr '\n' ' '))"
  else
    fail "aggregator: the hollow nodes are not served: $(admin_get /apis/metrics.k8s.io/v1beta1/nodes | head -c 300)"
  fi
  # A username header the cluster adds is followed: before, a request naming its user there
  # names nobody (401); after, it is the user. (kube-apiserver merges what it finds in the
  # ConfigMap with its own flags, so an added header stays.)
  before=$(as_proxy X-Kubestat-User)
  headers=$(kubectl -n kube-system get configmap extension-apiserver-authentication \
    -o jsonpath='{.data.requestheader-username-headers}')
  patch=$(python3 -c 'import json, sys
h = json.loads(sys.argv[1]) + ["X-Kubestat-User"]
print(json.dumps({"data": {"requestheader-username-headers": json.dumps(h)}}))' "$headers")
  kubectl -n kube-system patch configmap extension-apiserver-authentication --type=merge -p "$patch" >/dev/null
  followed() { [[ "$(as_proxy X-Kubestat-User)" == 200 ]]; }
  if [[ "$before" == 401 ]] && poll followed; then
    ok "aggregator: a username header added to the ConfigMap is followed without a restart (401, then 200)"
  else
    fail "aggregator: the ConfigMap's change was not followed (before $before, now $(as_proxy X-Kubestat-User)): $(grep 'extension-apiserver' "$agg/log" | tail -n 3)"
  fi
  if ! kill -0 "$agg_pid" 2>/dev/null; then
    fail "aggregator: exited: $(tail -n 5 "$agg/log")"
  elif grep -q ' 403\|Forbidden\|forbidden' "$agg/log"; then
    fail "aggregator: the ServiceAccount was refused something: $(grep -m 3 ' 403\|Forbidden\|forbidden' "$agg/log")"
  else
    ok "aggregator: nothing refused to the ServiceAccount (discovery, TokenReview, SubjectAccessReview, the ConfigMap)"
  fi
fi

# --- 8b. the bridge, kubestat-apiserver and a node agent as their ServiceAccounts -------------
# As the manifests deploy them: the bridge beside the aggregator with its account
# (kubestat-aggregator) follows the aggregator's gRPC Watch and pushes into kubestat-apiserver,
# which runs as kubestat-apiserver, reviews tokens and permissions with the real API server
# and reads the cluster's trust from the ConfigMap; a node agent (overlays/node-agent) runs
# as kubestat-node-agent and lets in only the kubestat-node-agent-reader token that the
# serviceaccount-token controller keeps in a Secret. Each is refused nothing it asks of the
# API server.
refused_in() {  # a log: its lines where the API server refused the account something
  grep -m 3 ' 403\|Forbidden\|forbidden' "$1" || true
}
if [[ -z "${agg_pid:-}" ]] || ! kill -0 "$agg_pid" 2>/dev/null; then
  fail "bridge and kubestat-apiserver: no aggregator running"
elif [[ -z "${KUBESTAT_APISERVER_BINARY:-}" || ! -x "$KUBESTAT_APISERVER_BINARY" ||
        -z "${KUBESTAT_BRIDGE_BINARY:-}" || ! -x "$KUBESTAT_BRIDGE_BINARY" ||
        -z "${KUBESTAT_NODE_AGENT_BINARY:-}" || ! -x "$KUBESTAT_NODE_AGENT_BINARY" ]]; then
  fail "bridge, kubestat-apiserver, node agent: KUBESTAT_APISERVER_BINARY, KUBESTAT_BRIDGE_BINARY or KUBESTAT_NODE_AGENT_BINARY names no binary"
else
  apiserver=$work/apiserver
  kubestat_account_kubeconfig "$apiserver" kubestat kubestat-apiserver
  apiserver_port=$(kubestat_free_port)
  "$KUBESTAT_APISERVER_BINARY" --listen-address="$agg_host" --secure-port="$apiserver_port" \
    --tls-cert-file="$apiserver_certs/tls.crt" --tls-private-key-file="$apiserver_certs/tls.key" \
    --cert-dir="$apiserver/certs" --authentication-kubeconfig="$apiserver/kubeconfig" \
    --authorization-kubeconfig="$apiserver/kubeconfig" > "$apiserver/log" 2>&1 &
  apiserver_pid=$!
  "$KUBESTAT_BRIDGE_BINARY" --aggregator-address="127.0.0.1:$grpc_port" \
    --aggregator-token-file="$agg/token" --apiserver-url="https://$agg_host:$apiserver_port" \
    --apiserver-ca-file="$apiserver_certs/ca.crt" --apiserver-token-file="$agg/token" \
    --listen-address=127.0.0.1 --secure-port=0 --cert-dir="$work/bridge-certs" \
    --authentication-kubeconfig="$agg/kubeconfig" --authorization-kubeconfig="$agg/kubeconfig" \
    > "$work/bridge.log" 2>&1 &
  bridge_pid=$!
  apiserver_get() {
    curl -sk --max-time 10 --cert "$KUBESTAT_CP_PKI/admin.crt" --key "$KUBESTAT_CP_PKI/admin.key" \
      "https://$agg_host:$apiserver_port$1" || true
  }
  pushed() {
    local body
    body=$(apiserver_get /apis/metrics.k8s.io/v1beta1/nodes)
    for name in node-0000 node-0001 node-0002; do
      [[ "$body" == *"\"name\":\"$name\""* ]] || return 1
    done
  }
  if poll pushed; then
    ok "bridge: pushes the aggregator's nodes into kubestat-apiserver, as kubestat-aggregator both ways (gRPC Watch, bulk write), and kubestat-apiserver serves them to the cluster CA's admin"
  else
    fail "bridge: kubestat-apiserver does not serve the hollow nodes: $(apiserver_get /apis/metrics.k8s.io/v1beta1/nodes | head -c 300); bridge: $(tail -n 3 "$work/bridge.log"); apiserver: $(tail -n 3 "$apiserver/log")"
  fi
  agent=$work/agent
  kubestat_account_kubeconfig "$agent" kubestat kubestat-node-agent
  agent_port=$(kubestat_free_port)
  "$KUBESTAT_NODE_AGENT_BINARY" --node-name=node-0000 \
    --podresources-socket="$work/podres/node-0000/kubelet.sock" --resolution=2s --call-timeout=500ms \
    --listen-address=127.0.0.1 --secure-port="$agent_port" --cert-dir="$agent/certs" \
    --authentication-kubeconfig="$agent/kubeconfig" --authorization-kubeconfig="$agent/kubeconfig" \
    > "$agent/log" 2>&1 &
  agent_pid=$!
  reader_token() {
    reader=$(kubectl -n kubestat get secret kubestat-node-agent-reader-token -o jsonpath='{.data.token}' 2>/dev/null | base64 -d)
    [[ -n "$reader" ]]
  }
  agent_code() {  # token
    curl -sk -o "$agent/answer" -w '%{http_code}' --max-time 10 -H "Authorization: Bearer $1" \
      "https://127.0.0.1:$agent_port/podresources" || true
  }
  reader_served() { [[ "$(agent_code "$reader")" == 200 ]] && grep -q '"node-0000"' "$agent/answer"; }
  if poll reader_token && poll reader_served; then
    agent_refused=$(refused_in "$agent/log")
    aggregator_code=$(agent_code "$(<"$agg/token")")
    anonymous_code=$(agent_code "")
    if [[ -z "$agent_refused" && "$aggregator_code" == 403 && "$anonymous_code" == 401 ]]; then
      ok "node agent: as kubestat-node-agent it serves node-0000's podresources to the kubestat-node-agent-reader token (200), 403 to kubestat-aggregator's, 401 without a token"
    else
      fail "node agent: refused by the API server: '$agent_refused'; kubestat-aggregator's token $aggregator_code (want 403), no token $anonymous_code (want 401)"
    fi
  else
    fail "node agent: the reader's token is not served ($(agent_code "${reader:-}")): $(tail -n 5 "$agent/log")"
  fi
  for log in "$work/bridge.log" "$apiserver/log"; do
    if [[ -n "$(refused_in "$log")" ]]; then
      fail "${log##*/}: its ServiceAccount was refused something: $(refused_in "$log")"
    fi
  done
  if kill -0 "$bridge_pid" 2>/dev/null && kill -0 "$apiserver_pid" 2>/dev/null &&
     [[ -z "$(refused_in "$work/bridge.log")$(refused_in "$apiserver/log")" ]]; then
    ok "bridge and kubestat-apiserver: running, nothing refused to their ServiceAccounts (TokenReview, SubjectAccessReview, the ConfigMap)"
  fi
fi

# --- 9. kubectl top through the real aggregation layer -----------------------------------------
# The APIServices the manifests made (metrics.k8s.io v1beta1 and v1, metrics v1alpha1) are
# pointed at a Service without a selector whose EndpointSlice names the aggregator's veth
# address; the kube-aggregator proxies there with its front-proxy certificate, as in a
# cluster, and kubectl (the release's) asks for protobuf.
if [[ "$agg_host" == 127.0.0.1 ]]; then
  echo "skip kubectl top through the aggregation layer, the HPA, the LimitRanger and the restart: no veth pair (it needs root and network namespaces)"
elif [[ -z "${agg_pid:-}" ]] || ! kill -0 "$agg_pid" 2>/dev/null; then
  fail "aggregation layer: no aggregator running"
else
  metrics_apiservices=(v1beta1.metrics.k8s.io v1.metrics.k8s.io v1alpha1.metrics)
  kubestat_expose kubestat-aggregator-cp "$agg_host" "$agg_port" "$agg_certs/ca.crt" "${metrics_apiservices[@]}"
  if poll kubestat_apiservices_available "${metrics_apiservices[@]}"; then
    ok "aggregation layer: the APIServices are Available, proxied to the aggregator at $agg_host:$agg_port"
  else
    fail "aggregation layer: not Available: $(kubectl get apiservice "${metrics_apiservices[@]}" -o jsonpath='{range .items[*]}{.metadata.name}: {.status.conditions[0].message}; {end}')"
  fi
  top_nodes() {
    top_out=$(kubectl top node --no-headers 2>&1) || return 1
    for name in node-0000 node-0001 node-0002; do
      grep -Eq "^$name +[0-9]+m +[0-9]+% +[0-9]+Mi +[0-9]+%" <<<"$top_out" || return 1
    done
  }
  # kubectl top pod: the real pods the hollow kubelets report, by their names.
  top_pods() {
    local want
    top_out=$(kubectl top pod -n shop --no-headers 2>&1) || return 1
    want=$(kubectl -n shop get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
    [[ -n "$want" ]] || return 1
    while read -r name; do
      grep -Eq "^$name +[0-9]+m +[0-9]+Mi" <<<"$top_out" || return 1
    done <<<"$want"
  }
  # Every hollow pod of every namespace in `kubectl top pod -A`, by namespace and name, and
  # nothing else from the hollow nodes' namespaces.
  top_all_pods() {
    local want got
    want=$(kubectl get pods -A -l kubestat.dev/hollow=true --field-selector=status.phase=Running \
      -o jsonpath='{range .items[*]}{.metadata.namespace} {.metadata.name}{"\n"}{end}' | sort)
    top_out=$(kubectl top pod -A --no-headers 2>&1) || return 1
    got=$(awk 'NR == FNR { ns[$1] = 1; next } ($1 in ns) && $3 ~ /^[0-9]+m$/ && $4 ~ /^[0-9]+Mi$/ { print $1, $2 }' \
      <(cut -d' ' -f1 <<<"$want") - <<<"$top_out" | sort)
    [[ -n "$want" && "$got" == "$want" ]]
  }
  # -l: exactly the pods the selector names.
  top_selected() {
    local want
    want=$(kubectl -n shop get pods -l tier=frontend -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
    top_out=$(kubectl top pod -n shop -l tier=frontend --no-headers 2>&1) || return 1
    [[ -n "$want" && "$(awk '{print $1}' <<<"$top_out" | sort)" == "$want" ]]
  }
  # --sum: kubectl adds the pods' exact usage and prints the total as it prints a row (cpu
  # rounded up to a millicore, memory down to a MiB), so with n rows the total is within n
  # units of the printed rows' sum: cpu at most, memory at least.
  top_sum() {
    top_out=$(kubectl top pod -n shop --sum 2>&1) || return 1
    python3 -c '
import re, sys
lines = [l.split() for l in sys.stdin.read().splitlines() if l.strip()]
rows = [l for l in lines[1:] if len(l) == 3 and re.fullmatch(r"\d+m", l[1]) and re.fullmatch(r"\d+Mi", l[2])]
total = lines[-1]
if len(rows) < 2 or len(total) != 2 or not set(lines[-2][0]) <= {"_"}:
    sys.exit(1)
cpu, mem = int(total[0][:-1]), int(total[1][:-2])
rows_cpu = sum(int(r[1][:-1]) for r in rows)
rows_mem = sum(int(r[2][:-2]) for r in rows)
n = len(rows)
sys.exit(0 if 0 <= rows_cpu - cpu < n and 0 <= mem - rows_mem < n else 1)' <<<"$top_out"
  }
  top_containers() {
    top_out=$(kubectl top pod -n shop --containers --no-headers 2>&1) || return 1
    grep -Eq ' web +[0-9]+m' <<<"$top_out" && grep -Eq ' envoy +[0-9]+m' <<<"$top_out"
  }
  # kubectl top and get --raw through the aggregation layer, with $1 serving the APIServices.
  check_top() {
    local backend=$1 raw
    if poll top_nodes; then
      ok "aggregation layer ($backend): kubectl top node shows the hollow nodes' cpu and memory"
    else
      fail "aggregation layer ($backend): kubectl top node: $top_out"
    fi
    if poll top_pods; then
      ok "aggregation layer ($backend): kubectl top pod -n shop shows every real web pod's cpu and memory"
    else
      fail "aggregation layer ($backend): kubectl top pod -n shop: $top_out"
    fi
    if poll top_all_pods; then
      ok "aggregation layer ($backend): kubectl top pod -A shows every running hollow pod, by namespace and name ($(wc -l <<<"$top_out") rows)"
    else
      fail "aggregation layer ($backend): kubectl top pod -A: $(head -c 600 <<<"$top_out")"
    fi
    if poll top_selected; then
      ok "aggregation layer ($backend): kubectl top pod -l tier=frontend shows exactly the pods the selector names"
    else
      fail "aggregation layer ($backend): kubectl top pod -l tier=frontend: $top_out"
    fi
    if poll top_sum; then
      ok "aggregation layer ($backend): kubectl top pod --sum: the total is the rows' sum ($(tail -n 1 <<<"$top_out" | tr -s ' '))"
    else
      fail "aggregation layer ($backend): kubectl top pod --sum: $top_out"
    fi
    if poll top_containers; then
      ok "aggregation layer ($backend): kubectl top pod --containers names the real containers (web, envoy)"
    else
      fail "aggregation layer ($backend): kubectl top pod --containers: $top_out"
    fi
    if raw=$(kubectl get --raw /apis/metrics/v1alpha1/nodes 2>&1) && [[ "$raw" == *'"kind":"NodeMetricsList"'* || "$raw" == *'"kind": "NodeMetricsList"'* ]] &&
       [[ "$raw" == *node-0001* ]]; then
      ok "aggregation layer ($backend): kubectl get --raw /apis/metrics/v1alpha1/nodes lists them"
    else
      fail "aggregation layer ($backend): get --raw metrics/v1alpha1: $(head -c 300 <<<"$raw")"
    fi
  }
  check_top aggregator
  # Authorization by the real RBAC, through the aggregation layer: a user (a client
  # certificate of the cluster CA) bound to a Role that reads pods' metrics in one namespace
  # gets them there, and 403 for nodes and for another namespace; a token the API server does
  # not know gets 401.
  viewer=$work/viewer
  kubestat_user_cert "$viewer" kubestat-viewer
  kubectl create namespace kubestat-cp-shop >/dev/null
  kubectl -n kubestat-cp-shop create role pod-metrics-reader --verb=get,list \
    --resource=pods.metrics.k8s.io >/dev/null
  kubectl -n kubestat-cp-shop create rolebinding kubestat-viewer --role=pod-metrics-reader \
    --user=kubestat-viewer >/dev/null
  as_viewer() {
    "$KUBESTAT_CP_KUBECTL" --server="$KUBESTAT_CP_SERVER" --certificate-authority="$KUBESTAT_CP_PKI/ca.crt" \
      --client-certificate="$viewer/tls.crt" --client-key="$viewer/tls.key" --kubeconfig=/dev/null "$@" 2>&1
  }
  shop=$(as_viewer get --raw /apis/metrics.k8s.io/v1beta1/namespaces/kubestat-cp-shop/pods) || true
  nodes=$(as_viewer top node) || true
  other=$(as_viewer get --raw /apis/metrics.k8s.io/v1beta1/namespaces/kube-system/pods) || true
  bogus=$("$KUBESTAT_CP_KUBECTL" --server="$KUBESTAT_CP_SERVER" \
    --certificate-authority="$KUBESTAT_CP_PKI/ca.crt" --token=not-a-token --kubeconfig=/dev/null \
    top node 2>&1) || true
  if [[ "$shop" == *'"kind":"PodMetricsList"'* &&
        "$nodes" == *'User "kubestat-viewer" cannot list resource "nodes" in API group "metrics.k8s.io"'* &&
        "$other" == *'User "kubestat-viewer" cannot list resource "pods" in API group "metrics.k8s.io" in the namespace "kube-system"'* &&
        "$bogus" == *"You must be logged in to the server"* ]]; then
    ok "aggregation layer: the real RBAC: pods' metrics in the Role's namespace (200), nodes and another namespace Forbidden, an unknown token Unauthorized"
  else
    fail "aggregation layer: RBAC: shop '$(head -c 120 <<<"$shop")', nodes '$nodes', kube-system '$other', unknown token '$bogus'"
  fi
  # The HPA: an autoscaling/v2 HPA on shop/web with a CPU utilization target of 300% (the
  # model's pods use about what they request). The hollow kubelets raise web's pods to 4 cpu
  # each (kubestat.dev/cpu): the real HPA
  # controller, reading kubestat through the aggregation layer, scales web up; every web pod
  # lowered to 10m, it scales web down to its minimum (downscale stabilization 30s here). Each
  # reaction's time from the load change is printed, against the aggregator's 2s resolution
  # and the HPA's 5s sync period.
  kubectl apply -f - >/dev/null <<'EOF'
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 6
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 300}}
EOF
  hpa_reads_metrics() {
    [[ "$(kubectl -n shop get hpa web -o jsonpath='{.status.conditions[?(@.type=="ScalingActive")].status}')" == True ]]
  }
  if poll hpa_reads_metrics; then
    ok "hpa: ScalingActive: the HPA controller reads kubestat's pod metrics ($(kubectl -n shop get hpa web -o jsonpath='{.status.currentMetrics[0].resource.current.averageUtilization}')% of the requests)"
  else
    fail "hpa: not ScalingActive: $(kubectl -n shop get hpa web -o jsonpath='{.status.conditions}')"
  fi
  replicas_before=$(kubectl -n shop get deployment web -o jsonpath='{.spec.replicas}')
  loaded=$SECONDS
  kubectl -n shop annotate pods -l app=web kubestat.dev/cpu=4 --overwrite >/dev/null
  scaled_up() { (( $(kubectl -n shop get deployment web -o jsonpath='{.spec.replicas}') > replicas_before )); }
  if poll scaled_up; then
    ok "hpa: 4 cpu per pod scaled web up from $replicas_before to $(kubectl -n shop get deployment web -o jsonpath='{.spec.replicas}') replicas $((SECONDS - loaded))s after the load rose"
  else
    fail "hpa: no scale-up from $replicas_before: $(kubectl -n shop describe hpa web 2>&1 | tail -n 8 | tr -s ' ' | tr '\n' ';')"
  fi
  unloaded=$SECONDS
  kubectl -n shop annotate pods -l app=web kubestat.dev/cpu=10m --overwrite >/dev/null
  scaled_down() { [[ "$(kubectl -n shop get deployment web -o jsonpath='{.spec.replicas}')" == 1 ]]; }
  if poll scaled_down; then
    ok "hpa: the load dropped to 10m per pod, web scaled down to 1 replica $((SECONDS - unloaded))s later (30s of it the downscale stabilization)"
  else
    fail "hpa: no scale-down: $(kubectl -n shop describe hpa web 2>&1 | tail -n 8 | tr -s ' ' | tr '\n' ';')"
  fi
  # The LimitRanger and kubestat's recommendations: seed 003's example LimitRange, a
  # Deployment on the hollow nodes whose pod then uses 2 cpu (above the max of 1): the
  # recommendation wants more than the LimitRange admits and is fitted into it, naming the
  # constraint; applied to the Deployment, the real API server admits the new pod; the values
  # before fitting (wanted) are refused by the LimitRanger naming each constraint boundBy
  # names.
  lr_ns=kubestat-cp-limits
  kubectl create namespace "$lr_ns" >/dev/null
  kubectl -n "$lr_ns" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: LimitRange
metadata: {name: seed-003}
spec:
  limits:
  - type: Container
    min: {cpu: 100m, memory: 250Mi}
    max: {cpu: "1", memory: 1Gi}
    default: {cpu: 500m, memory: 500Mi}
    defaultRequest: {cpu: 250m, memory: 250Mi}
    maxLimitRequestRatio: {cpu: "4"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: hungry}
spec:
  replicas: 1
  selector: {matchLabels: {app: hungry}}
  template:
    metadata: {labels: {app: hungry, kubestat.dev/hollow: "true"}}
    spec:
      nodeSelector: {kubestat.dev/hollow-node: "true"}
      terminationGracePeriodSeconds: 0
      containers:
      - name: main
        image: registry.k8s.io/pause:3.10
        resources:
          requests: {cpu: 250m, memory: 300Mi}
          limits: {cpu: 500m, memory: 500Mi}
EOF
  hungry_running() {
    [[ "$(kubectl -n "$lr_ns" get deployment hungry -o jsonpath='{.status.readyReplicas}')" == 1 ]]
  }
  poll hungry_running || fail "limitranger: the Deployment hungry never ran: $(kubectl -n "$lr_ns" get pods 2>&1 | tail -n 2)"
  kubectl -n "$lr_ns" annotate pods -l app=hungry kubestat.dev/cpu=2 --overwrite >/dev/null
  # The recommendation, once the history holds the loaded samples: its four values, the four
  # wanted, then each boundBy constraint in the LimitRanger's words ("maximum cpu usage per
  # Container is 1"), one per line.
  read_recommendation() {
    kubectl get --raw "/apis/metrics/v1alpha1/namespaces/$lr_ns/recommendations/deployment.hungry.main" 2>/dev/null |
      python3 -c '
import json, sys
r = json.load(sys.stdin)
fields = [(k, res) for k in ("requests", "limits") for res in ("cpu", "memory")]
want = r["requests"]["cpu"].get("wanted", "")
cores = float(want[:-1]) / 1000 if want.endswith("m") else float(want or 0)
if r["requests"]["cpu"]["history"]["samples"] < 3 or cores <= 1:
    sys.exit(1)
print(" ".join(r[k][res]["value"] for k, res in fields))
print(" ".join(r[k][res].get("wanted", r[k][res]["value"]) for k, res in fields))
words = set()
for k, res in fields:
    for b in r[k][res].get("boundBy", []):
        if b["constraint"] in ("min", "max"):
            words.add("%s %s usage per %s is %s" % ("minimum" if b["constraint"] == "min" else "maximum", res, b["type"], b["value"]))
        else:
            words.add("%s max limit to request ratio per %s is %s" % (res, b["type"], b["value"]))
print("\n".join(sorted(words)))
'
  }
  recommended() { recommendation=$(read_recommendation) && [[ -n "$recommendation" ]]; }
  if poll recommended; then
    read -r v_req_cpu v_req_mem v_lim_cpu v_lim_mem <<<"$(sed -n 1p <<<"$recommendation")"
    read -r w_req_cpu w_req_mem w_lim_cpu w_lim_mem <<<"$(sed -n 2p <<<"$recommendation")"
    bounds=$(sed -n '3,$p' <<<"$recommendation")
    if [[ "$v_req_cpu" == 1 && "$bounds" == *"maximum cpu usage per Container is 1"* ]]; then
      ok "limitranger: the recommendation wants $w_req_cpu cpu and is fitted to $v_req_cpu (bound by: $(tr '\n' ';' <<<"$bounds"))"
    else
      fail "limitranger: recommendation $v_req_cpu/$v_req_mem/$v_lim_cpu/$v_lim_mem (wanted $w_req_cpu/$w_req_mem/$w_lim_cpu/$w_lim_mem), bounds: $bounds"
    fi
    kubectl -n "$lr_ns" set resources deployment hungry -c main \
      --requests="cpu=$v_req_cpu,memory=$v_req_mem" --limits="cpu=$v_lim_cpu,memory=$v_lim_mem" >/dev/null
    if kubectl -n "$lr_ns" rollout status deployment hungry --timeout="${deadline}s" >/dev/null 2>&1; then
      ok "limitranger: the fitted values applied to the Deployment; the real API server admitted its new pod"
    else
      fail "limitranger: the fitted values were not admitted: $(kubectl -n "$lr_ns" get events --field-selector reason=FailedCreate -o jsonpath='{.items[-1:].message}')"
    fi
    refusal=$(kubectl -n "$lr_ns" create --dry-run=server -f - 2>&1 <<EOF
apiVersion: v1
kind: Pod
metadata: {name: wanted}
spec:
  containers:
  - name: main
    image: registry.k8s.io/pause:3.10
    resources:
      requests: {cpu: "$w_req_cpu", memory: "$w_req_mem"}
      limits: {cpu: "$w_lim_cpu", memory: "$w_lim_mem"}
EOF
) && refusal="admitted: $refusal"
    unnamed=()
    while read -r words; do
      [[ -n "$words" && "$refusal" != *"$words"* ]] && unnamed+=("$words")
    done <<<"$bounds"
    if [[ "$refusal" == *forbidden* ]] && (( ${#unnamed[@]} == 0 )); then
      ok "limitranger: the wanted values are refused, naming every constraint boundBy named: ${refusal#*forbidden: }"
    else
      fail "limitranger: the wanted values: '$refusal'; not named there: ${unnamed[*]:-}"
    fi
  else
    fail "limitranger: no loaded recommendation for deployment.hungry.main: $(kubectl get --raw "/apis/metrics/v1alpha1/namespaces/$lr_ns/recommendations" 2>&1 | head -c 400)"
  fi
  # kube-apiserver restarted mid-run (controlplane/start.sh restart-apiserver: same flags,
  # port and etcd), with etcd compacted to its head just before: kubestat's watches are
  # answered by kube-apiserver's watch cache, not by etcd, so a compaction expires them when
  # they must be resumed, as here, where neither the new watch cache nor etcd holds their
  # resume points. The aggregator is answered 410 Gone, counts it
  # (kubestat_discovery_relists_after_gone_total), lists again and loses nothing; it and the
  # hollow nodes follow without a restart of their own; a pod made after it is served.
  etcd_call() {  # path, JSON body: etcd's v3 JSON gateway with the API server's client pair
    curl -sS --max-time 10 --cacert "$KUBESTAT_CP_PKI/etcd-ca.crt" \
      --cert "$KUBESTAT_CP_PKI/apiserver-etcd-client.crt" --key "$KUBESTAT_CP_PKI/apiserver-etcd-client.key" \
      "$KUBESTAT_CP_ETCD_ENDPOINT$1" -d "$2"
  }
  relists_after_gone() {
    admin_get /metrics | awk '$1 == "kubestat_discovery_relists_after_gone_total" { print int($2) }'
  }
  gone_before=$(relists_after_gone)
  head_revision=$(etcd_call /v3/kv/range '{"key":"AA=="}' | python3 -c 'import json, sys; print(json.load(sys.stdin)["header"]["revision"])' 2>/dev/null || true)
  compacted=$(etcd_call /v3/kv/compaction "{\"revision\":\"$head_revision\",\"physical\":true}" 2>&1 || true)
  restarted_at=$SECONDS
  if [[ -z "$head_revision" || "$compacted" != *'"header"'* ]]; then
    fail "etcd compaction: revision '$head_revision': $compacted"
  elif "$root/controlplane/start.sh" restart-apiserver "$state" > "$work/restart.log" 2>&1; then
    kubectl -n shop scale deployment web --replicas=2 >/dev/null
    expired_and_relisted() { local now; now=$(relists_after_gone); (( ${now:--1} > ${gone_before:--1} )); }
    if poll top_pods && poll hollow_served && kill -0 "$agg_pid" 2>/dev/null && kill -0 "$hollow_pid" 2>/dev/null; then
      ok "api server restart: followed without restarting kubestat; web's new pod is in kubectl top pod $((SECONDS - restarted_at))s after the restart began"
    else
      fail "api server restart: not followed: $top_out; aggregator alive: $(kill -0 "$agg_pid" 2>/dev/null && echo yes || echo no); $(tail -n 3 "$agg/log")"
    fi
    if poll expired_and_relisted; then
      ok "etcd compaction: etcd compacted to revision $head_revision, the aggregator's watches answered 410 Gone and listed again ($gone_before, then $(relists_after_gone) relists after 410), every hollow node still served"
    else
      fail "etcd compaction: no relist after 410 counted ($gone_before, now $(relists_after_gone)): $(grep -i 'watch\|list' "$agg/log" | tail -n 3)"
    fi
  else
    fail "api server restart: $(cat "$work/restart.log")"
  fi
  # Nodes removed and added, by the real list+watch: node-0002's Node deleted, the aggregator
  # stops serving it; the same Node created again (as a kubelet registers it), it is served.
  node_served() {  # a NodeMetrics of that name (a NotFound Status names it too, in details)
    local body
    body=$(admin_get "/apis/metrics.k8s.io/v1beta1/nodes/$1")
    [[ "$body" == *'"kind":"NodeMetrics"'* && "$body" == *"\"name\":\"$1\""* ]]
  }
  node_not_served() { ! node_served "$1" && [[ "$(admin_get /apis/metrics.k8s.io/v1beta1/nodes)" != *"\"name\":\"$1\""* ]]; }
  kubectl get node node-0002 -o json | python3 -c '
import json, sys
node = json.load(sys.stdin)
meta = node["metadata"]
node["metadata"] = {"name": meta["name"], "labels": meta.get("labels", {})}
json.dump(node, sys.stdout)' > "$work/node-0002.json"
  kubectl delete node node-0002 --wait=true >/dev/null
  if poll node_not_served node-0002 && node_served node-0000; then
    ok "discovery: a Node deleted from the API server is no longer served (node-0002), the others are"
  else
    fail "discovery: node-0002 still served after its Node's deletion: $(admin_get /apis/metrics.k8s.io/v1beta1/nodes/node-0002 | head -c 200)"
  fi
  kubectl create -f "$work/node-0002.json" >/dev/null
  if poll node_served node-0002; then
    ok "discovery: the Node created again is scraped and served (node-0002)"
  else
    fail "discovery: node-0002 not served again: $(admin_get /apis/metrics.k8s.io/v1beta1/nodes/node-0002 | head -c 200); $(tail -n 3 "$agg/log")"
  fi

  # --- 3, second run: metrics.k8s.io and metrics/v1alpha1 served by kubestat-apiserver -------
  # As the manifests deploy it: the APIServices pointed at kubestat-apiserver, which serves
  # what the bridge pushes, with watches (the aggregator serves no REST watch: its own watch
  # is gRPC, which the bridge follows).
  if [[ -n "${apiserver_pid:-}" ]] && kill -0 "$apiserver_pid" 2>/dev/null; then
    kubestat_expose kubestat-apiserver-cp "$agg_host" "$apiserver_port" "$apiserver_certs/ca.crt" "${metrics_apiservices[@]}"
    served_by_apiserver() {
      kubestat_apiservices_available "${metrics_apiservices[@]}" &&
        [[ "$(kubectl get apiservice v1beta1.metrics.k8s.io -o jsonpath='{.spec.service.name}')" == kubestat-apiserver-cp ]] &&
        kubectl get --raw '/apis/metrics/v1alpha1/nodes?watch=1&timeoutSeconds=1' >/dev/null 2>&1
    }
    if poll served_by_apiserver; then
      ok "aggregation layer: the APIServices are Available, proxied to kubestat-apiserver at $agg_host:$apiserver_port"
    else
      fail "aggregation layer: kubestat-apiserver's APIServices not Available: $(kubectl get apiservice "${metrics_apiservices[@]}" -o jsonpath='{range .items[*]}{.metadata.name}: {.status.conditions[0].message}; {end}')"
    fi
    check_top kubestat-apiserver
    # A watch of metrics/v1alpha1 through the aggregation layer: every shop pod ADDED, then
    # MODIFIED as the bridge pushes each newer scrape.
    watch_events() {
      # (kubectl ends by SIGPIPE once python3 has seen enough, or at the watch's timeout.)
      { timeout 30 "$KUBESTAT_CP_KUBECTL" get --raw '/apis/metrics/v1alpha1/namespaces/shop/pods?watch=1&timeoutSeconds=25' 2>&1 || true; } |
        python3 -c '
import json, sys
want = set(sys.argv[1].split())
added, modified = set(), set()
for line in sys.stdin:
    try:
        event = json.loads(line)
    except ValueError:
        print("not an event:", line[:200]); sys.exit(1)
    name = event["object"]["metadata"]["name"]
    (added if event["type"] == "ADDED" else modified).add(name)
    if want <= added and modified & want:
        print("%d ADDED, then MODIFIED: %s" % (len(added), sorted(modified & want)[0])); sys.exit(0)
print("ADDED %s, MODIFIED %s, want %s" % (sorted(added), sorted(modified), sorted(want))); sys.exit(1)' \
          "$(kubectl -n shop get pods -l app=web -o jsonpath='{.items[*].metadata.name}')"
    }
    if watch_out=$(watch_events); then
      ok "aggregation layer (kubestat-apiserver): a watch of metrics/v1alpha1 pods in shop: $watch_out"
    else
      fail "aggregation layer (kubestat-apiserver): watch of metrics/v1alpha1: $watch_out"
    fi
  fi
fi

if [[ -n "${agg_pid:-}" ]]; then
  kill "$agg_pid" 2>/dev/null || true
  wait "$agg_pid" 2>/dev/null || true
fi
if [[ -n "$hollow_pid" ]]; then
  kill "$hollow_pid" 2>/dev/null || true
  wait "$hollow_pid" 2>/dev/null || true
fi

# --- the end -----------------------------------------------------------------------------------
if (( ${#failures[@]} > 0 )); then
  echo "${#failures[@]} check(s) failed; logs in $state/logs (run with --keep to keep them)"
  exit 1
fi
echo "all checks passed"
