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
#   9. as root: the APIServices pointed at that Service (an EndpointSlice of the veth address)
#      are Available, and `kubectl top node` and `kubectl get --raw /apis/metrics/v1alpha1/nodes`
#      through the real aggregation layer show the hollow nodes, `kubectl top pod` the real pods
#      and `--containers` their containers; the real RBAC lets a user bound
#      to a Role read pods' metrics in its namespace only (403 for nodes and other namespaces)
#      and an unknown token gets 401; an autoscaling/v2 HPA on shop/web scales it up when the
#      hollow kubelets report 4 cpu per pod and down when they report 10m (times printed);
#      in a namespace with seed 003's LimitRange, the recommendation for a pod using 2 cpu is
#      fitted into it, admitted when applied, and its wanted values are refused naming each
#      constraint boundBy named; kube-apiserver restarted mid-run is followed by the aggregator
#      and the hollow nodes without a restart of their own;
# then stops everything (trap), also on failure or interrupt. Each check reports ok or FAIL;
# the test fails if any fails. It waits only by polling a condition with a deadline.
#
# Usage: tests/controlplane/control_plane_test.sh [--keep]
#   --keep  leave the state directory (logs, kubeconfig) for a look, print its path
# Environment: KUBESTAT_SIM_BINARY (check 7), KUBESTAT_AGGREGATOR_BINARY (check 8), KUBESTAT_CACHE (build.sh's cache), TMPDIR,
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
  if [[ -n "${netns:-}" ]]; then ip netns del "$netns" 2>/dev/null || true; fi
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
    --hollow-lease-renew-interval=2s > "$work/hollow.log" 2>&1 &
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
  veth=kscp$(( $$ % 100000 ))
  octet=$(( $$ % 250 + 1 ))
  if ip netns add "$netns" && ip link add "${veth}a" type veth peer name "${veth}b" &&
     ip link set "${veth}b" netns "$netns" &&
     ip addr add "10.254.$octet.1/30" dev "${veth}a" && ip link set "${veth}a" up &&
     ip -n "$netns" addr add "10.254.$octet.2/30" dev "${veth}b" &&
     ip -n "$netns" link set "${veth}b" up; then
    agg_host=10.254.$octet.1
  else
    # A machine that refuses network namespaces leaves check 9 out (it says so below).
    echo "skip the veth pair: ip refused it ($(ip netns add "$netns-probe" 2>&1; ip netns del "$netns-probe" 2>/dev/null))"
    ip netns del "$netns" 2>/dev/null || true
    netns=""
  fi
fi
agg_certs=$work/aggregator-serving
mkdir -p "$agg_certs"
openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -sha256 -days 2 \
  -subj "/CN=kubestat-aggregator-cp-ca" -keyout "$agg_certs/ca.key" -out "$agg_certs/ca.crt" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -subj "/CN=kubestat-aggregator" \
  -keyout "$agg_certs/tls.key" -out "$agg_certs/tls.csr" 2>/dev/null
openssl x509 -req -in "$agg_certs/tls.csr" -CA "$agg_certs/ca.crt" -CAkey "$agg_certs/ca.key" \
  -CAcreateserial -sha256 -days 2 -out "$agg_certs/tls.crt" -extfile <(printf '%s\n' \
  "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
  "extendedKeyUsage=serverAuth" \
  "subjectAltName=DNS:kubestat-aggregator-cp.kubestat.svc,IP:$agg_host,IP:127.0.0.1") 2>/dev/null

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
  kubectl -n kubestat create token kubestat-aggregator --duration=1h > "$agg/token"
  printf '%s\n' "apiVersion: v1" "kind: Config" "clusters:" "- name: cp" \
    "  cluster: {server: \"$KUBESTAT_CP_SERVER\", certificate-authority: \"$KUBESTAT_CP_PKI/ca.crt\"}" \
    "users:" "- name: kubestat-aggregator" "  user: {tokenFile: \"$agg/token\"}" "contexts:" \
    "- name: cp" "  context: {cluster: cp, user: kubestat-aggregator}" "current-context: cp" \
    > "$agg/kubeconfig"
  agg_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$KUBESTAT_AGGREGATOR_BINARY" --kubeconfig="$agg/kubeconfig" \
    --authentication-kubeconfig="$agg/kubeconfig" --authorization-kubeconfig="$agg/kubeconfig" \
    --listen-address="$agg_host" --secure-port="$agg_port" --cert-dir="$agg/certs" \
    --tls-cert-file="$agg_certs/tls.crt" --tls-private-key-file="$agg_certs/tls.key" \
    --grpc-port=0 --storage-dir="$agg/store" --metric-resolution=2s --kubelet-timeout=1s \
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
  ca_bundle=$(base64 -w0 < "$agg_certs/ca.crt")
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: kubestat-aggregator-cp, namespace: kubestat}
spec:
  ports: [{name: https, port: 443, targetPort: $agg_port}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kubestat-aggregator-cp-1
  namespace: kubestat
  labels: {kubernetes.io/service-name: kubestat-aggregator-cp}
addressType: IPv4
ports: [{name: https, port: $agg_port, protocol: TCP}]
endpoints: [{addresses: ["$agg_host"], conditions: {ready: true}}]
EOF
  for apiservice in v1beta1.metrics.k8s.io v1.metrics.k8s.io v1alpha1.metrics; do
    kubectl patch apiservice "$apiservice" --type=merge -p "{\"spec\":{\"service\":{\"name\":\"kubestat-aggregator-cp\",\"namespace\":\"kubestat\",\"port\":443},\"caBundle\":\"$ca_bundle\",\"insecureSkipTLSVerify\":false}}" >/dev/null
  done
  available() {
    local a
    for a in v1beta1.metrics.k8s.io v1.metrics.k8s.io v1alpha1.metrics; do
      [[ "$(kubectl get apiservice "$a" -o jsonpath='{.status.conditions[?(@.type=="Available")].status}')" == True ]] || return 1
    done
  }
  if poll available; then
    ok "aggregation layer: the APIServices are Available, proxied to the aggregator at $agg_host:$agg_port"
  else
    fail "aggregation layer: not Available: $(kubectl get apiservice v1beta1.metrics.k8s.io v1alpha1.metrics -o jsonpath='{range .items[*]}{.metadata.name}: {.status.conditions[0].message}; {end}')"
  fi
  top_nodes() {
    top_out=$(kubectl top node --no-headers 2>&1) || return 1
    for name in node-0000 node-0001 node-0002; do
      grep -Eq "^$name +[0-9]+m +[0-9]+% +[0-9]+Mi +[0-9]+%" <<<"$top_out" || return 1
    done
  }
  if poll top_nodes; then
    ok "aggregation layer: kubectl top node shows the hollow nodes' cpu and memory"
  else
    fail "aggregation layer: kubectl top node: $top_out"
  fi
  if raw=$(kubectl get --raw /apis/metrics/v1alpha1/nodes 2>&1) && [[ "$raw" == *'"kind":"NodeMetricsList"'* || "$raw" == *'"kind": "NodeMetricsList"'* ]] &&
     [[ "$raw" == *node-0001* ]]; then
    ok "aggregation layer: kubectl get --raw /apis/metrics/v1alpha1/nodes lists them"
  else
    fail "aggregation layer: get --raw metrics/v1alpha1: $(head -c 300 <<<"$raw")"
  fi
  # Authorization by the real RBAC, through the aggregation layer: a user (a client
  # certificate of the cluster CA) bound to a Role that reads pods' metrics in one namespace
  # gets them there, and 403 for nodes and for another namespace; a token the API server does
  # not know gets 401.
  viewer=$work/viewer
  mkdir -p "$viewer"
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -subj "/CN=kubestat-viewer" \
    -keyout "$viewer/tls.key" -out "$viewer/tls.csr" 2>/dev/null
  openssl x509 -req -in "$viewer/tls.csr" -CA "$KUBESTAT_CP_PKI/ca.crt" -CAkey "$KUBESTAT_CP_PKI/ca.key" \
    -CAcreateserial -sha256 -days 1 -out "$viewer/tls.crt" \
    -extfile <(printf '%s\n' "extendedKeyUsage=clientAuth") 2>/dev/null
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
  if poll top_pods; then
    ok "aggregation layer: kubectl top pod -n shop shows every real web pod's cpu and memory"
  else
    fail "aggregation layer: kubectl top pod -n shop: $top_out"
  fi
  containers_out=$(kubectl top pod -n shop --containers --no-headers 2>&1) || true
  if grep -Eq ' web +[0-9]+m' <<<"$containers_out" && grep -Eq ' envoy +[0-9]+m' <<<"$containers_out"; then
    ok "aggregation layer: kubectl top pod --containers names the real containers (web, envoy)"
  else
    fail "aggregation layer: kubectl top pod --containers: $containers_out"
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
  # port and etcd; its watch cache starts afresh, so watches resumed from before answer 410
  # and clients list again): the aggregator and the hollow nodes follow it without a restart
  # of their own; a pod made after it is served.
  restarted_at=$SECONDS
  if "$root/controlplane/start.sh" restart-apiserver "$state" > "$work/restart.log" 2>&1; then
    kubectl -n shop scale deployment web --replicas=2 >/dev/null
    if poll top_pods && kill -0 "$agg_pid" 2>/dev/null && kill -0 "$hollow_pid" 2>/dev/null; then
      ok "api server restart: followed without restarting kubestat; web's new pod is in kubectl top pod $((SECONDS - restarted_at))s after the restart began"
    else
      fail "api server restart: not followed: $top_out; aggregator alive: $(kill -0 "$agg_pid" 2>/dev/null && echo yes || echo no); $(tail -n 3 "$agg/log")"
    fi
  else
    fail "api server restart: $(cat "$work/restart.log")"
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
