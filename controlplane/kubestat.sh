# kubestat's processes in front of the control plane of start.sh: functions sourced by
# controlplane/demo.sh and tests/controlplane/control_plane_test.sh, after they have sourced
# the state directory's control-plane.env (KUBESTAT_CP_SERVER, KUBESTAT_CP_PKI,
# KUBESTAT_CP_KUBECTL, KUBECONFIG with the cluster's admin).
#
#   kubestat_account_kubeconfig DIR NAMESPACE ACCOUNT [DURATION]
#       DIR/token: a TokenRequest token of the ServiceAccount (default 1h), and
#       DIR/kubeconfig naming the API server with it (tokenFile, so a renewed token is read).
#   kubestat_veth_up NETNS
#       a veth pair, one end on this host and the other in the network namespace NETNS (made
#       here), on a /30 of 10.254.0.0/16 chosen from NETNS; prints the host end's address.
#       Kubernetes refuses loopback addresses in EndpointSlices, so the aggregation layer
#       reaches a kubestat process only at an address such as this one. Needs root.
#   kubestat_veth_down NETNS
#       removes it (the veth pair goes with the namespace).
#   kubestat_serving_pair DIR CN SUBJECT_ALT_NAMES
#       DIR/ca.crt (a CA of its own) and DIR/tls.crt, DIR/tls.key signed by it for CN and
#       the names (an openssl subjectAltName list: "DNS:a.b.svc,IP:10.254.1.1").
#   kubestat_user_cert DIR USER
#       DIR/tls.crt and DIR/tls.key: a client certificate of the cluster CA naming USER (no
#       group), and DIR/kubeconfig with it.
#   kubestat_expose SERVICE ADDRESS PORT CA_FILE APISERVICE...
#       a Service kubestat/SERVICE without a selector and its EndpointSlice naming
#       ADDRESS:PORT, and each APIService pointed at it with CA_FILE as its caBundle.
#   kubestat_apiservices_available APISERVICE...
#       succeeds when each is Available.
#   kubestat_apply_identities OVERLAY...
#       applies (server-side) the Namespaces, ServiceAccounts, RBAC, Secrets of ServiceAccount
#       tokens and APIServices of each manifests/overlays/OVERLAY, not their workloads (which
#       run as processes on this machine).
#   kubestat_free_port
#       prints a free TCP port of 127.0.0.1.

kubestat_account_kubeconfig() {
  local dir=$1 namespace=$2 account=$3 duration=${4:-1h}
  mkdir -p "$dir"
  (umask 077 && "$KUBESTAT_CP_KUBECTL" -n "$namespace" create token "$account" \
    --duration="$duration" > "$dir/token")
  printf '%s\n' "apiVersion: v1" "kind: Config" "clusters:" "- name: kubestat" \
    "  cluster: {server: \"$KUBESTAT_CP_SERVER\", certificate-authority: \"$KUBESTAT_CP_PKI/ca.crt\"}" \
    "users:" "- name: $account" "  user: {tokenFile: \"$dir/token\"}" "contexts:" \
    "- name: $account@kubestat" "  context: {cluster: kubestat, user: $account}" \
    "current-context: $account@kubestat" > "$dir/kubeconfig"
}

# The /30 of a namespace: 10.254.X.Y with X.Y from its name's checksum, Y a multiple of 4.
kubestat_veth_subnet() {
  local sum
  sum=$(cksum <<<"$1" | cut -d' ' -f1)
  echo "10.254.$((sum % 256)).$(((sum / 256) % 64 * 4))"
}

kubestat_veth_up() {
  local netns=$1 subnet base last veth
  subnet=$(kubestat_veth_subnet "$netns")
  base=${subnet%.*}
  last=${subnet##*.}
  veth=ks$(cksum <<<"$netns" | cut -d' ' -f1 | tail -c 9)
  ip netns add "$netns" &&
    ip link add "${veth}a" type veth peer name "${veth}b" &&
    ip link set "${veth}b" netns "$netns" &&
    ip addr add "$base.$((last + 1))/30" dev "${veth}a" && ip link set "${veth}a" up &&
    ip -n "$netns" addr add "$base.$((last + 2))/30" dev "${veth}b" &&
    ip -n "$netns" link set "${veth}b" up || {
      ip netns del "$netns" 2>/dev/null
      return 1
    }
  echo "$base.$((last + 1))"
}

kubestat_veth_down() {
  ip netns del "$1" 2>/dev/null || true
}

kubestat_serving_pair() {
  local dir=$1 cn=$2 names=$3
  mkdir -p "$dir"
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -sha256 -days 2 \
    -subj "/CN=$cn-ca" -keyout "$dir/ca.key" -out "$dir/ca.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -subj "/CN=$cn" \
    -keyout "$dir/tls.key" -out "$dir/tls.csr" 2>/dev/null
  openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -CAcreateserial -sha256 -days 2 -out "$dir/tls.crt" -extfile <(printf '%s\n' \
    "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
    "extendedKeyUsage=serverAuth" "subjectAltName=$names") 2>/dev/null
  rm -f "$dir/tls.csr"
}

kubestat_user_cert() {
  local dir=$1 user=$2
  mkdir -p "$dir"
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -subj "/CN=$user" \
    -keyout "$dir/tls.key" -out "$dir/tls.csr" 2>/dev/null
  openssl x509 -req -in "$dir/tls.csr" -CA "$KUBESTAT_CP_PKI/ca.crt" -CAkey "$KUBESTAT_CP_PKI/ca.key" \
    -CAcreateserial -sha256 -days 2 -out "$dir/tls.crt" \
    -extfile <(printf '%s\n' "extendedKeyUsage=clientAuth") 2>/dev/null
  rm -f "$dir/tls.csr"
  printf '%s\n' "apiVersion: v1" "kind: Config" "clusters:" "- name: kubestat" \
    "  cluster: {server: \"$KUBESTAT_CP_SERVER\", certificate-authority: \"$KUBESTAT_CP_PKI/ca.crt\"}" \
    "users:" "- name: $user" \
    "  user: {client-certificate: \"$dir/tls.crt\", client-key: \"$dir/tls.key\"}" "contexts:" \
    "- name: $user@kubestat" "  context: {cluster: kubestat, user: $user}" \
    "current-context: $user@kubestat" > "$dir/kubeconfig"
}

kubestat_expose() {
  local service=$1 address=$2 port=$3 ca_bundle apiservice
  ca_bundle=$(base64 -w0 < "$4")
  shift 4
  "$KUBESTAT_CP_KUBECTL" apply -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: Service
metadata: {name: $service, namespace: kubestat}
spec:
  ports: [{name: https, port: 443, targetPort: $port}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: $service-1
  namespace: kubestat
  labels: {kubernetes.io/service-name: $service}
addressType: IPv4
ports: [{name: https, port: $port, protocol: TCP}]
endpoints: [{addresses: ["$address"], conditions: {ready: true}}]
EOF
  for apiservice in "$@"; do
    "$KUBESTAT_CP_KUBECTL" patch apiservice "$apiservice" --type=merge -p "{\"spec\":{\"service\":{\"name\":\"$service\",\"namespace\":\"kubestat\",\"port\":443},\"caBundle\":\"$ca_bundle\",\"insecureSkipTLSVerify\":false}}" >/dev/null || return 1
  done
}

kubestat_apiservices_available() {
  local apiservice
  for apiservice in "$@"; do
    [[ "$("$KUBESTAT_CP_KUBECTL" get apiservice "$apiservice" -o jsonpath='{.status.conditions[?(@.type=="Available")].status}')" == True ]] || return 1
  done
}

kubestat_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

kubestat_apply_identities() {
  local root overlay
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  for overlay in "$@"; do
    # (kustomize warns that the manifests' `bases` are deprecated: kept for kustomize v2.0.3.)
    "$KUBESTAT_CP_KUBECTL" kustomize "$root/manifests/overlays/$overlay" 2>/dev/null || return 1
  done | python3 -c '
import re, sys
keep = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
        "RoleBinding", "APIService", "Secret"}
for doc in re.split(r"^---$", sys.stdin.read(), flags=re.M):
    kind = re.search(r"^kind: (\S+)$", doc, re.M)
    if kind and kind.group(1) in keep and (kind.group(1) != "Secret" or
                                           "kubernetes.io/service-account-token" in doc):
        print("---\n" + doc.strip())' |
    "$KUBESTAT_CP_KUBECTL" apply --server-side --force-conflicts -f - >/dev/null
}
