# shellcheck shell=bash
# What the whole-system benchmark scripts share: a work directory and processes cleaned up
# at exit, free ports, the simulator started and waited for, and the aggregator started as
# in production (HTTPS with a self-signed pair, a token file and a rules file). Source it
# after `set -euo pipefail`.

# bench_init NAME: sets $work (a new temporary directory) and $pids; at exit every process
# in $pids is stopped, the last started first (the aggregator before the simulator it
# scrapes), and $work is removed (kept, with its logs, when KUBESTAT_BENCH_KEEP is set).
bench_init() {
  work="$(mktemp -d -t "kubestat-$1-XXXXXX")"
  pids=()
  trap bench_cleanup EXIT
}

bench_cleanup() {
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
  if [[ -n "${KUBESTAT_BENCH_KEEP:-}" ]]; then
    echo "kept the work directory (logs): $work"
  else
    rm -rf "$work"
  fi
}

# cpu_ticks PID: the CPU ticks (user + system, getconf CLK_TCK per second) process PID used
# so far. rss_kib PID: its resident memory, KiB.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
# Task switches of every live thread of process $1 so far, voluntary and not.
ctx_switches() {
  cat /proc/"$1"/task/*/status 2>/dev/null |
    awk '/^(voluntary|nonvoluntary)_ctxt_switches/ {n += $2} END {printf "%d", n}'
}

# A free TCP port on 127.0.0.1.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_sim SIM [FLAGS...]: runs the simulator with its kubeconfig in $work/kubeconfig and
# its log in $work/sim.log, and waits until it is ready (exits with the log if it is not).
start_sim() {
  local sim="$1"
  shift
  "$sim" --kubeconfig-out="$work/kubeconfig" "$@" >"$work/sim.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 600); do grep -q READY "$work/sim.log" && break; sleep 0.2; done
  grep -q READY "$work/sim.log" || { cat "$work/sim.log"; exit 1; }
}

# bench_user USER RULES...: sets $token to a fresh bearer token of USER in
# $work/tokens.csv, and writes the rules file $work/rules.yaml from the given lines.
bench_user() {
  token="$1-$RANDOM$RANDOM"
  echo "$token,$1,1000" >"$work/tokens.csv"
  shift
  printf '%s\n' 'rules:' "$@" >"$work/rules.yaml"
}

# start_aggregator AGG PORT [FLAGS...]: runs the aggregator against the simulator (plain
# HTTP kubelets by InternalIP, 10 s resolution, 5 s kubelet timeout), serving HTTPS on
# 127.0.0.1:PORT with the token and rules files of bench_user, no gRPC, its store and
# certificates in $work and its log in $work/aggregator.log; sets $agg_pid.
start_aggregator() {
  local agg="$1" port="$2"
  shift 2
  "$agg" --kubeconfig="$work/kubeconfig" --kubelet-scheme=http \
    --kubelet-preferred-address-types=InternalIP --metric-resolution=10s --kubelet-timeout=5s \
    --listen-address=127.0.0.1 --secure-port="$port" --cert-dir="$work/certs" \
    --token-auth-file="$work/tokens.csv" --authorization-rules-file="$work/rules.yaml" \
    --grpc-port=0 --storage-dir="$work/store" "$@" ${KUBESTAT_AGGREGATOR_FLAGS:-} \
    >"$work/aggregator.log" 2>&1 &
  agg_pid=$!
  pids+=("$agg_pid")
}

# start_apiserver APISERVER PORT [FLAGS...]: runs kubestat-apiserver (memory store unless
# FLAGS name another) on 127.0.0.1:PORT with the token and rules files of bench_user, its
# certificates in $work/api-certs and its log in $work/apiserver.log, and waits until it
# serves; sets $api_pid.
start_apiserver() {
  local apiserver="$1" port="$2"
  shift 2
  "$apiserver" --listen-address=127.0.0.1 --secure-port="$port" --cert-dir="$work/api-certs" \
    --token-auth-file="$work/tokens.csv" --authorization-rules-file="$work/rules.yaml" \
    "$@" >"$work/apiserver.log" 2>&1 &
  api_pid=$!
  pids+=("$api_pid")
  for _ in $(seq 100); do grep -q "serving on" "$work/apiserver.log" && break; sleep 0.1; done
}

# start_bridge BRIDGE GRPC_PORT API_PORT: runs kubestat-bridge following the aggregator's
# gRPC Watch on 127.0.0.1:GRPC_PORT and pushing into the apiserver on 127.0.0.1:API_PORT,
# with bench_user's token (written to $work/token) for both and for its own /metrics, its
# log in $work/bridge.log; sets $bridge_pid.
start_bridge() {
  local bridge="$1" grpc_port="$2" api_port="$3"
  printf '%s\n' "$token" >"$work/token"
  "$bridge" --aggregator-address="127.0.0.1:$grpc_port" --aggregator-token-file="$work/token" \
    --apiserver-url="https://127.0.0.1:$api_port" \
    --apiserver-ca-file="$work/api-certs/apiserver.crt" --apiserver-token-file="$work/token" \
    --listen-address=127.0.0.1 --secure-port=0 --cert-dir="$work/bridge-certs" \
    --token-auth-file="$work/tokens.csv" --authorization-rules-file="$work/rules.yaml" \
    >"$work/bridge.log" 2>&1 &
  bridge_pid=$!
  pids+=("$bridge_pid")
}

# wait_nodes URL NODES LOG: waits (at most 15 minutes) until the metrics.k8s.io node list at
# URL, read with bench_user's token, holds NODES nodes; exits with the tail of LOG if not.
wait_nodes() {
  local url="$1" want="$2" log="$3" n=0
  echo "waiting for $want nodes' metrics at $url ..."
  for _ in $(seq 900); do
    n=$(curl -kfs -H "Authorization: Bearer $token" "$url" 2>/dev/null |
      grep -o '"name":"node-[0-9]*"' | grep -c . || true)
    [[ "$n" == "$want" ]] && return 0
    sleep 1
  done
  echo "only $n of $want nodes served"
  tail "$log"
  exit 1
}

# aggregator_figures URL: keeps the aggregator's /metrics (read at URL with bench_user's
# token, which needs get on /metrics) in $work/aggregator-metrics, and prints what explains
# its freshness: the publish lag (a node's scrape stored to the publication serving it) and
# the publications' duration as shares per bucket, and the publications by trigger.
aggregator_figures() {
  curl -kfs -H "Authorization: Bearer $token" "$1" >"$work/aggregator-metrics" || true
  python3 - "$work/aggregator-metrics" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
for name in ("kubestat_publish_lag_seconds", "kubestat_publish_duration_seconds"):
    count = re.search(name + r"_count (\S+)", text)
    total = re.search(name + r"_sum (\S+)", text)
    if not count or float(count.group(1)) == 0:
        continue
    n = float(count.group(1))
    buckets = re.findall(name + r'_bucket\{le="([^"]+)"\} (\S+)', text)
    shares = ", ".join(f"<= {le} s {100 * float(c) / n:.0f}%" for le, c in buckets if le != "+Inf")
    print(f"{name}: {n:.0f}, mean {float(total.group(1)) / n:.3f} s; {shares}")
print("publications: " + " ".join(
    l.split('trigger="')[1].replace('"}', "") for l in text.splitlines()
    if l.startswith("kubestat_query_snapshot_publishes_total{")))
EOF
}
