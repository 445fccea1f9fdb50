#!/usr/bin/env bash
# Starts a Kubernetes control plane on this machine, configured as a production cluster is,
# with everything in one state directory; `stop` ends it.
#
# etcd (TLS, client certificates), kube-apiserver, kube-controller-manager and kube-scheduler
# from build.sh's cache (built there first if missing), each listening on 127.0.0.1 only, on
# free ports chosen at start. The state directory receives:
#   pki/                      a cluster CA, an etcd CA, a front-proxy CA and every certificate
#                             and key signed by them; the service-account key pair
#   admin.kubeconfig          user kubestat-admin in group system:masters
#   controller-manager.kubeconfig, scheduler.kubeconfig
#   control-plane.env         the ports, paths and versions as shell assignments (KUBECONFIG=...)
#   logs/<component>.log      each process's output; pids/<component>.pid
#   etcd/                     etcd's data
# The flags and why each was chosen: docs/control-plane.md.
#
# Usage:
#   controlplane/start.sh [--dir] DIR [--bin BINDIR] [--hpa-sync-period D] [--hpa-downscale-stabilization D]
#                         [--client-qps N]
#   controlplane/start.sh stop [--dir] DIR
#   controlplane/start.sh restart-apiserver [--dir] DIR
#   DIR                              the state directory (created; must not hold a running one)
#   --bin BINDIR                     the binaries, named etcd, kube-apiserver, ... (symlinks are
#                                    fine if their targets have those names); default: what
#                                    build.sh prints (building if needed)
#   --hpa-sync-period D              kube-controller-manager's HPA sync period. Default: 5s
#   --hpa-downscale-stabilization D  its downscale stabilization window. Default: 30s
#   --client-qps N                   the controller-manager's and the scheduler's requests per
#                                    second to the API server (--kube-api-qps, burst twice it),
#                                    as large clusters raise them. Default: theirs (20 and 50)
#   stop                             ends the processes DIR's pids/ names (TERM, then KILL after 30s)
#   restart-apiserver                stops kube-apiserver (as stop does) and starts it again with
#                                    the same command line, on the same port and etcd; returns
#                                    when its /readyz is ok (120s at most)
# Prints the kubeconfig path and the ports on stdout when the apiserver's /readyz is ok and
# the controller-manager's and scheduler's /healthz answer ok; exits 1 (after stopping what it
# started, logs left in DIR/logs) when one does not within its deadline.
# Needs openssl, curl, python3 (to find free ports) and flock. Runs as any user.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
die() { echo "start.sh: $*" >&2; exit 1; }

mode=start
dir=
bin=
hpa_sync_period=5s
hpa_downscale_stabilization=30s
client_qps=
while (( $# > 0 )); do
  case "$1" in
    stop) mode=stop ;;
    restart-apiserver) mode=restart ;;
    --dir) dir=${2:?--dir needs a directory}; shift ;;
    --bin) bin=${2:?--bin needs a directory}; shift ;;
    --hpa-sync-period) hpa_sync_period=${2:?}; shift ;;
    --hpa-downscale-stabilization) hpa_downscale_stabilization=${2:?}; shift ;;
    --client-qps) client_qps=${2:?}; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "start.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
    *) [[ -z "$dir" ]] || { echo "start.sh: one state directory only" >&2; exit 2; }; dir=$1 ;;
  esac
  shift
done
[[ -n "$dir" ]] || { usage >&2; exit 2; }
if [[ "$mode" == stop && ! -d "$dir" ]]; then exit 0; fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
pki=$dir/pki
components=(etcd kube-apiserver kube-controller-manager kube-scheduler)

# --- stop ------------------------------------------------------------------------------------

# The pid in pids/$1.pid if that process is still the component it was started as.
live_pid() {
  local file=$dir/pids/$1.pid pid
  [[ -f "$file" ]] || return 1
  pid=$(<"$file")
  [[ "$pid" =~ ^[0-9]+$ ]] && [[ -e /proc/$pid ]] || return 1
  [[ "$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null || true)")" == "$1" ]]
}

stop_all() {
  local i name pid deadline
  # The reverse of the start order: clients first, etcd last.
  for (( i = ${#components[@]} - 1; i >= 0; i-- )); do
    name=${components[i]}
    if live_pid "$name"; then
      pid=$(<"$dir/pids/$name.pid")
      kill -TERM "$pid" 2>/dev/null || true
      deadline=$((SECONDS + 30))
      while [[ -e /proc/$pid ]] && live_pid "$name" && (( SECONDS < deadline )); do sleep 0.2; done
      if live_pid "$name"; then
        echo "start.sh: $name (pid $pid) ignored TERM for 30s; killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
      fi
    fi
    rm -f "$dir/pids/$name.pid"
  done
}

if [[ "$mode" == stop ]]; then
  stop_all
  exit 0
fi

if [[ "$mode" == restart ]]; then
  live_pid kube-apiserver || die "$dir runs no kube-apiserver"
  pid=$(<"$dir/pids/kube-apiserver.pid")
  mapfile -d '' command < "/proc/$pid/cmdline"
  kill -TERM "$pid"
  deadline=$((SECONDS + 30))
  while live_pid kube-apiserver && (( SECONDS < deadline )); do sleep 0.2; done
  if live_pid kube-apiserver; then kill -KILL "$pid" 2>/dev/null || true; fi
  while [[ -e /proc/$pid ]]; do sleep 0.1; done
  echo "--- $(date -u +%Y-%m-%dT%H:%M:%SZ) restarted: ${command[*]}" >> "$dir/logs/kube-apiserver.log"
  "${command[@]}" </dev/null >>"$dir/logs/kube-apiserver.log" 2>&1 &
  pid=$!
  echo "$pid" > "$dir/pids/kube-apiserver.pid"
  # shellcheck source=/dev/null
  server=$(source "$dir/control-plane.env" && echo "$KUBESTAT_CP_SERVER")
  deadline=$((SECONDS + 120))
  until [[ "$(curl -sS --max-time 5 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" \
                --key "$pki/admin.key" "$server/readyz" 2>/dev/null || true)" == ok ]]; do
    [[ -e /proc/$pid ]] || die "kube-apiserver exited after the restart; see $dir/logs/kube-apiserver.log"
    (( SECONDS < deadline )) || die "kube-apiserver not ready 120s after the restart"
    sleep 0.5
  done
  exit 0
fi

# --- start -----------------------------------------------------------------------------------

for name in "${components[@]}"; do
  if live_pid "$name"; then die "$dir already runs $name (pid $(<"$dir/pids/$name.pid")): stop it first"; fi
done
for tool in openssl curl python3 flock; do
  command -v "$tool" >/dev/null || die "needs $tool"
done
if [[ -z "$bin" ]]; then
  bin=$("$here/build.sh" --quiet) || die "build.sh failed"
fi
for name in "${components[@]}"; do
  [[ -x "$bin/$name" ]] || die "no $bin/$name (run controlplane/build.sh)"
done
mkdir -p "$pki" "$dir/logs" "$dir/pids" "$dir/etcd"
chmod 700 "$pki" "$dir/etcd"

# Five free loopback ports from the kernel (bind to port 0), all held at once so that they
# differ, then released for the components to bind. Should another process take one in
# between, that component exits ("address already in use") and start.sh fails saying so.
read -r etcd_port etcd_peer_port apiserver_port kcm_port scheduler_port < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(5)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])
')

# --- PKI -------------------------------------------------------------------------------------
# ECDSA P-256 for every certificate (as manifests/gen-certs.sh), RSA 2048 for the
# service-account key pair (RS256, which every token verifier accepts). Kept across restarts
# in the same directory, so clients' kubeconfigs stay valid.

new_ca() {  # name, common name
  [[ -f "$pki/$1.crt" ]] && return
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -sha256 -days 3650 \
    -subj "/CN=$2" -keyout "$pki/$1.key" -out "$pki/$1.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null
}

new_cert() {  # name, signing CA, subject, extendedKeyUsage, subjectAltName (or "")
  [[ -f "$pki/$1.crt" ]] && return
  local extensions="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=$4"
  if [[ -n "$5" ]]; then extensions+=$'\n'"subjectAltName=$5"; fi
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -subj "$3" \
    -keyout "$pki/$1.key" -out "$pki/$1.csr" 2>/dev/null
  openssl x509 -req -in "$pki/$1.csr" -CA "$pki/$2.crt" -CAkey "$pki/$2.key" -CAcreateserial \
    -sha256 -days 365 -out "$pki/$1.crt" -extfile <(printf '%s\n' "$extensions") 2>/dev/null
  rm -f "$pki/$1.csr"
  openssl verify -CAfile "$pki/$2.crt" "$pki/$1.crt" >/dev/null || die "$1.crt does not verify"
}

umask 077
new_ca ca kubestat-cluster-ca
new_ca etcd-ca kubestat-etcd-ca
new_ca front-proxy-ca kubestat-front-proxy-ca
loopback_san="DNS:localhost,IP:127.0.0.1"
new_cert etcd-server etcd-ca /CN=etcd serverAuth,clientAuth "$loopback_san"
new_cert apiserver-etcd-client etcd-ca /CN=kube-apiserver-etcd-client clientAuth ""
# The kubernetes Service's names and first address (10.96.0.1) as kubeadm's, for clients that
# reach the apiserver by its Service name.
new_cert apiserver ca /CN=kube-apiserver serverAuth \
  "$loopback_san,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:10.96.0.1"
new_cert apiserver-kubelet-client ca "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth ""
new_cert front-proxy-client front-proxy-ca /CN=front-proxy-client clientAuth ""
new_cert admin ca "/O=system:masters/CN=kubestat-admin" clientAuth ""
new_cert controller-manager ca /CN=system:kube-controller-manager clientAuth ""
new_cert scheduler ca /CN=system:kube-scheduler clientAuth ""
new_cert controller-manager-serving ca /CN=kube-controller-manager serverAuth "$loopback_san"
new_cert scheduler-serving ca /CN=kube-scheduler serverAuth "$loopback_san"
if [[ ! -f "$pki/sa.key" ]]; then
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$pki/sa.key" 2>/dev/null
  openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
fi
umask 022

server=https://127.0.0.1:$apiserver_port
write_kubeconfig() {  # file, user name, certificate name
  local ca_data cert_data key_data
  ca_data=$(base64 -w0 "$pki/ca.crt")
  cert_data=$(base64 -w0 "$pki/$3.crt")
  key_data=$(base64 -w0 "$pki/$3.key")
  (umask 077; cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kubestat
  cluster:
    server: $server
    certificate-authority-data: $ca_data
users:
- name: $2
  user:
    client-certificate-data: $cert_data
    client-key-data: $key_data
contexts:
- name: $2@kubestat
  context:
    cluster: kubestat
    user: $2
current-context: $2@kubestat
EOF
  )
}
write_kubeconfig "$dir/admin.kubeconfig" kubestat-admin admin
write_kubeconfig "$dir/controller-manager.kubeconfig" system:kube-controller-manager controller-manager
write_kubeconfig "$dir/scheduler.kubeconfig" system:kube-scheduler scheduler

# --- processes -------------------------------------------------------------------------------

on_failure() {
  echo "start.sh: stopping what was started; logs in $dir/logs" >&2
  stop_all
}
trap 'on_failure' ERR

launch() {  # component, flags...
  local name=$1
  shift
  echo "--- $(date -u +%Y-%m-%dT%H:%M:%SZ) $bin/$name $*" >> "$dir/logs/$name.log"
  "$bin/$name" "$@" </dev/null >>"$dir/logs/$name.log" 2>&1 &
  local pid=$! end=$((SECONDS + 10))
  echo "$pid" > "$dir/pids/$name.pid"
  # Until the forked shell has exec'd the component, /proc/<pid>/exe is bash, and live_pid
  # would take the component for gone: wait for the exec (or the child's end).
  while [[ -e /proc/$pid ]] && ! live_pid "$name" && (( SECONDS < end )); do sleep 0.05; done
}

# Polls `curl URL` until its body is "ok" (or, for etcd, healthy) within the deadline.
wait_ok() {  # component, deadline in seconds, expected body pattern, curl arguments...
  local name=$1 deadline=$((SECONDS + $2)) pattern=$3 body=
  shift 3
  while (( SECONDS < deadline )); do
    if ! live_pid "$name"; then
      echo "start.sh: $name exited; the end of $dir/logs/$name.log:" >&2
      tail -n 30 "$dir/logs/$name.log" >&2
      return 1
    fi
    body=$(curl -sS --max-time 5 "$@" 2>/dev/null || true)
    [[ "$body" =~ $pattern ]] && return 0
    sleep 0.5
  done
  echo "start.sh: $name not ready after $2s (last answer: ${body:-none}); the end of $dir/logs/$name.log:" >&2
  tail -n 30 "$dir/logs/$name.log" >&2
  return 1
}

launch etcd \
  --name=kubestat-etcd \
  --data-dir="$dir/etcd" \
  --listen-client-urls="https://127.0.0.1:$etcd_port" \
  --advertise-client-urls="https://127.0.0.1:$etcd_port" \
  --listen-peer-urls="https://127.0.0.1:$etcd_peer_port" \
  --initial-advertise-peer-urls="https://127.0.0.1:$etcd_peer_port" \
  --initial-cluster="kubestat-etcd=https://127.0.0.1:$etcd_peer_port" \
  --initial-cluster-state=new \
  --cert-file="$pki/etcd-server.crt" --key-file="$pki/etcd-server.key" \
  --client-cert-auth=true --trusted-ca-file="$pki/etcd-ca.crt" \
  --peer-cert-file="$pki/etcd-server.crt" --peer-key-file="$pki/etcd-server.key" \
  --peer-client-cert-auth=true --peer-trusted-ca-file="$pki/etcd-ca.crt" \
  --snapshot-count=10000
etcd_curl=(--cacert "$pki/etcd-ca.crt" --cert "$pki/apiserver-etcd-client.crt" --key "$pki/apiserver-etcd-client.key")
wait_ok etcd 60 '"health":"true"' "${etcd_curl[@]}" "https://127.0.0.1:$etcd_port/health"

launch kube-apiserver \
  --bind-address=127.0.0.1 \
  --secure-port="$apiserver_port" \
  --advertise-address=127.0.0.1 \
  --endpoint-reconciler-type=none \
  --etcd-servers="https://127.0.0.1:$etcd_port" \
  --etcd-cafile="$pki/etcd-ca.crt" \
  --etcd-certfile="$pki/apiserver-etcd-client.crt" \
  --etcd-keyfile="$pki/apiserver-etcd-client.key" \
  --tls-cert-file="$pki/apiserver.crt" \
  --tls-private-key-file="$pki/apiserver.key" \
  --client-ca-file="$pki/ca.crt" \
  --authorization-mode=Node,RBAC \
  --enable-admission-plugins=NamespaceLifecycle,LimitRanger,ServiceAccount,NodeRestriction,DefaultStorageClass,DefaultTolerationSeconds,PodSecurity,Priority,RuntimeClass,ResourceQuota,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy \
  --allow-privileged=true \
  --enable-bootstrap-token-auth=true \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$pki/sa.pub" \
  --service-account-signing-key-file="$pki/sa.key" \
  --service-cluster-ip-range=10.96.0.0/12 \
  --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname \
  --proxy-client-cert-file="$pki/front-proxy-client.crt" \
  --proxy-client-key-file="$pki/front-proxy-client.key" \
  --requestheader-client-ca-file="$pki/front-proxy-ca.crt" \
  --requestheader-allowed-names=front-proxy-client \
  --requestheader-username-headers=X-Remote-User \
  --requestheader-group-headers=X-Remote-Group \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --enable-aggregator-routing=true \
  --v=2
apiserver_curl=(--cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key")
wait_ok kube-apiserver 120 '^ok$' "${apiserver_curl[@]}" "$server/readyz"

client_rate=()
if [[ -n "$client_qps" ]]; then
  [[ "$client_qps" =~ ^[0-9]+$ ]] || die "--client-qps must be a whole number"
  client_rate=(--kube-api-qps="$client_qps" --kube-api-burst=$((client_qps * 2)))
fi
launch kube-controller-manager \
  --kubeconfig="$dir/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$dir/controller-manager.kubeconfig" \
  --authorization-kubeconfig="$dir/controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="$kcm_port" \
  --tls-cert-file="$pki/controller-manager-serving.crt" \
  --tls-private-key-file="$pki/controller-manager-serving.key" \
  --client-ca-file="$pki/ca.crt" \
  --requestheader-client-ca-file="$pki/front-proxy-ca.crt" \
  --controllers='*' \
  --use-service-account-credentials=true \
  --root-ca-file="$pki/ca.crt" \
  --service-account-private-key-file="$pki/sa.key" \
  --cluster-name=kubestat \
  --cluster-signing-cert-file="$pki/ca.crt" \
  --cluster-signing-key-file="$pki/ca.key" \
  --service-cluster-ip-range=10.96.0.0/12 \
  --horizontal-pod-autoscaler-sync-period="$hpa_sync_period" \
  --horizontal-pod-autoscaler-downscale-stabilization="$hpa_downscale_stabilization" \
  --flex-volume-plugin-dir="$dir/flexvolume" \
  --leader-elect=true \
  "${client_rate[@]}" \
  --v=2
launch kube-scheduler \
  --kubeconfig="$dir/scheduler.kubeconfig" \
  --authentication-kubeconfig="$dir/scheduler.kubeconfig" \
  --authorization-kubeconfig="$dir/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="$scheduler_port" \
  --tls-cert-file="$pki/scheduler-serving.crt" \
  --tls-private-key-file="$pki/scheduler-serving.key" \
  --client-ca-file="$pki/ca.crt" \
  --requestheader-client-ca-file="$pki/front-proxy-ca.crt" \
  --leader-elect=true \
  "${client_rate[@]}" \
  --v=2
wait_ok kube-controller-manager 60 '^ok$' --cacert "$pki/ca.crt" "https://127.0.0.1:$kcm_port/healthz"
wait_ok kube-scheduler 60 '^ok$' --cacert "$pki/ca.crt" "https://127.0.0.1:$scheduler_port/healthz"
trap - ERR

kube_version=$("$bin/kube-apiserver" --version)
etcd_version=$("$bin/etcd" --version | sed -n 's/^etcd Version: //p')
cat > "$dir/control-plane.env" <<EOF
# Written by controlplane/start.sh; source it.
KUBECONFIG=$dir/admin.kubeconfig
KUBESTAT_CP_BIN=$bin
KUBESTAT_CP_KUBECTL=$bin/kubectl
KUBESTAT_CP_VERSION='${kube_version#Kubernetes }'
KUBESTAT_CP_ETCD_VERSION=$etcd_version
KUBESTAT_CP_SERVER=$server
KUBESTAT_CP_APISERVER_PORT=$apiserver_port
KUBESTAT_CP_ETCD_ENDPOINT=https://127.0.0.1:$etcd_port
KUBESTAT_CP_ETCD_PEER_PORT=$etcd_peer_port
KUBESTAT_CP_CONTROLLER_MANAGER_PORT=$kcm_port
KUBESTAT_CP_SCHEDULER_PORT=$scheduler_port
KUBESTAT_CP_PKI=$pki
EOF

cat <<EOF
control plane ${kube_version#Kubernetes } (etcd $etcd_version) running in $dir
  kubeconfig:              $dir/admin.kubeconfig
  kube-apiserver:          $server
  etcd:                    https://127.0.0.1:$etcd_port (peer $etcd_peer_port)
  kube-controller-manager: https://127.0.0.1:$kcm_port
  kube-scheduler:          https://127.0.0.1:$scheduler_port
  try:   KUBECONFIG=$dir/admin.kubeconfig $bin/kubectl get --raw='/readyz?verbose'
  stop:  $here/start.sh stop $dir
EOF
