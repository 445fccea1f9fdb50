#!/usr/bin/env bash
# The secondary API server under a whole cluster, as real processes on loopback:
# kubestat-sim (NODES nodes × PODS pods) scraped by kubestat-aggregator every 10 s,
# kubestat-bridge following its gRPC watch and pushing into kubestat-apiserver (memory
# store). Measures, once every node is held by the apiserver:
#   - push throughput: objects acknowledged per second by the apiserver (the bridge's
#     kubestat_bridge_pushed_objects_total over DURATION),
#   - end-to-end freshness: for every pod the apiserver serves, how old its newest sample is
#     (now - the metrics.k8s.io timestamp), sampled over DURATION: p50, p99, max; the same
#     at the aggregator, to tell the push path's share from publication's, and the
#     aggregator's publish lag and publications (lib.sh's aggregator_figures),
#   - LIST latency with wrk (bench/scripts/rest_load.lua): all nodes (v1beta1) at 20/s and one
#     namespace's pods at 200/s,
#   - watch fan-out: WATCHERS watches of every pod (curl -N) for DURATION: events received,
#   - the apiserver's RSS and CPU, and its RSS per object held.
# KUBESTAT_BENCH_PHASES (default "list,watch") picks the measurements after push throughput
# and freshness, which always run; KUBESTAT_AGGREGATOR_FLAGS adds flags to the aggregator's.
#
#   bench/scripts/apiserver_load.sh [BUILD_DIR] [NODES] [PODS_PER_NODE] [DURATION_SECONDS] [WATCHERS] [STORE]
# STORE: memory (default) or etcd (a local etcd from Debian's etcd-server, its data in the
# work directory, --max-txn-ops above the bridge's batch size).
set -euo pipefail

build="${1:-build}"
nodes="${2:-1000}"
pods="${3:-30}"
duration="${4:-30}"
watchers="${5:-100}"
store="${6:-memory}"
here="$(cd "$(dirname "$0")" && pwd)"
sim="$build/sim/kubestat-sim"
agg="$build/aggregator/kubestat-aggregator"
apiserver="$build/apiserver/kubestat-apiserver"
bridge="$build/bridge/kubestat-bridge"
for b in "$sim" "$agg" "$apiserver" "$bridge"; do
  [[ -x "$b" ]] || { echo "build $b first" >&2; exit 1; }
done
source "$here/lib.sh"
bench_init apiserver

tenants=$((nodes * (pods - 2) / 30))
((tenants > 0)) || tenants=1
port=$(free_port)
grpc_port=$(free_port)
api_port=$(free_port)
start_sim "$sim" --nodes="$nodes" --pods-per-node="$pods" --tenant-namespaces="$tenants"

# One user reads and pushes everywhere (the figures are of the data path, not of access).
bench_user loadtest '- users: [loadtest]' '  verbs: [get, list, watch, create, update, delete]' \
  '  apiGroups: [metrics.k8s.io, metrics]' '  resources: [nodes, pods, writes]' \
  '- users: [loadtest]' '  verbs: [get]' '  nonResourceURLs: [/metrics]'
start_aggregator "$agg" "$port" --grpc-address=127.0.0.1 --grpc-port="$grpc_port"
store_flags=()
case "$store" in
  memory) ;;
  etcd)
    etcd_port=$(free_port)
    etcd --name bench --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" \
      --advertise-client-urls "http://127.0.0.1:$etcd_port" --listen-peer-urls "http://127.0.0.1:$(free_port)" \
      --max-txn-ops 2000 --max-request-bytes 8388608 --quota-backend-bytes 8589934592 \
      >"$work/etcd.log" 2>&1 &
    pids+=($!)
    store_flags=(--etcd-servers="http://127.0.0.1:$etcd_port")
    ;;
  *) echo "STORE must be memory or etcd, not $store" >&2; exit 2 ;;
esac
start_apiserver "$apiserver" "$api_port" "${store_flags[@]}"
start_bridge "$bridge" "$grpc_port" "$api_port"

auth=(-H "Authorization: Bearer $token")
api="https://127.0.0.1:$api_port"
wait_nodes "$api/apis/metrics.k8s.io/v1beta1/nodes" "$nodes" "$work/bridge.log"
bridge_url=$(sed -n 's/.*serving \/metrics.* on \(https:[^ ]*\).*/\1/p' "$work/bridge.log" | head -1)
pushed() {
  curl -kfs "${auth[@]}" "$bridge_url/metrics" |
    awk '/^kubestat_bridge_pushed_objects_total\{code="200"\}/ {print $2}'
}
# The bridge's push lag histogram buckets ("le count" lines).
lag_buckets() {
  curl -kfs "${auth[@]}" "$bridge_url/metrics" |
    sed -n 's/^kubestat_bridge_push_lag_seconds_bucket{le="\([^"]*\)"} \(.*\)/\1 \2/p'
}
phases="${KUBESTAT_BENCH_PHASES:-list,watch}"
phase() { [[ ",$phases," == *",$1,"* ]]; }

echo "== push throughput and freshness over ${duration}s (pods served by the apiserver and the aggregator)"
before=$(pushed)
lag_buckets >"$work/lag-before"
start=$(date +%s.%N)
: >"$work/ages"
: >"$work/aggregator-ages"
# Prints, for every pod of the metrics.k8s.io list read from stdin, its age when the list
# was asked for (argv[1], epoch seconds: the server reads its snapshot on arrival, so the
# transfer and parsing of a large list do not count).
ages_py='
import json, sys, datetime
now = float(sys.argv[1])
for item in json.load(sys.stdin)["items"]:
    t = datetime.datetime.strptime(item["timestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    print(round(now - t, 3))'
end=$(($(date +%s) + duration))
while (($(date +%s) < end)); do
  asked=$(date +%s.%N)
  curl -kfs "${auth[@]}" "$api/apis/metrics.k8s.io/v1beta1/pods" |
    python3 -c "$ages_py" "$asked" >>"$work/ages"
  asked=$(date +%s.%N)
  curl -kfs "${auth[@]}" "https://127.0.0.1:$port/apis/metrics.k8s.io/v1beta1/pods" |
    python3 -c "$ages_py" "$asked" >>"$work/aggregator-ages"
  sleep 1
done
after=$(pushed)
lag_buckets >"$work/lag-after"
elapsed=$(python3 -c "import time; print(time.time() - $start)")
python3 - "$before" "$after" "$elapsed" "$work/ages" "$work/aggregator-ages" \
  "$work/lag-before" "$work/lag-after" <<'EOF'
import sys
before, after, elapsed = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print(f"push throughput: {(after - before) / elapsed:.0f} objects/s ({after - before:.0f} in {elapsed:.1f} s)")
read = lambda p: {le: float(n) for le, n in (l.split() for l in open(p) if l.strip())}
lag0, lag1 = read(sys.argv[6]), read(sys.argv[7])
pushes = lag1.get("+Inf", 0) - lag0.get("+Inf", 0)
if pushes > 0:
    shares = [f"{le} s {100 * (lag1[le] - lag0.get(le, 0)) / pushes:.1f}%"
              for le in lag1 if le != "+Inf"]
    print(f"push lag (newest sample time to acknowledged push) of {pushes:.0f} objects, share at "
          "or under: " + ", ".join(shares))
for path, where in ((sys.argv[4], "apiserver"), (sys.argv[5], "aggregator")):
    ages = sorted(float(x) for x in open(path) if x.strip())
    pick = lambda q: ages[min(len(ages) - 1, int(q * len(ages)))]
    print(f"freshness at the {where} over {len(ages)} pod samples: p50 {pick(0.5):.1f} s, "
          f"p99 {pick(0.99):.1f} s, max {ages[-1]:.1f} s (time asked - sample time; whole-second "
          "timestamps)")
EOF

echo "== the aggregator's publications over the run (explain its freshness)"
aggregator_figures "https://127.0.0.1:$port/metrics"

script="$here/rest_load.lua"
namespace="$api/apis/metrics.k8s.io/v1beta1/namespaces/tenant-0007/pods"
if phase list; then
  echo "== LIST all $nodes nodes, v1beta1, 20 req/s"
  wrk --latency "${auth[@]}" -s "$script" -t2 -c4 -d "${duration}s" "$api/apis/metrics.k8s.io/v1beta1/nodes" -- 20 2
  echo "== LIST one namespace's pods (tenant-0007), v1beta1, 200 req/s"
  wrk --latency "${auth[@]}" -s "$script" -t2 -c4 -d "${duration}s" "$namespace" -- 200 2
fi

phase watch || watchers=0
echo "== watch fan-out: $watchers watches of every pod for ${duration}s"
for ((i = 0; i < watchers; i++)); do
  curl -kfsN "${auth[@]}" "$api/apis/metrics/v1alpha1/pods?watch=1&resourceVersion=$(
    curl -kfs "${auth[@]}" "$api/apis/metrics/v1alpha1/pods?limit=1" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')" \
    -m "$duration" 2>/dev/null | wc -l >"$work/watch-$i" &
done
wait_for=$((duration + 5))
((watchers == 0)) || sleep "$wait_for"
total=$(cat "$work"/watch-* 2>/dev/null | awk '{s += $1} END {print s + 0}')
echo "events received: $total by $watchers watchers in ${duration}s ($((total / duration)) events/s)"

objects=$(curl -kfs "${auth[@]}" "$api/metrics" |
  awk '/^kubestat_apiserver_objects\{/ {s += $2} END {print s + 0}')
rss=$(awk '/VmRSS/ {print $2}' /proc/$api_pid/status)
echo "== apiserver: $objects objects, RSS $rss KiB ($((rss * 1024 / (objects > 0 ? objects : 1))) bytes per object), CPU $(ps -o time= -p $api_pid)"
echo "== bridge: RSS $(awk '/VmRSS/ {print $2, $3}' /proc/$bridge_pid/status), CPU $(ps -o time= -p $bridge_pid)"
if [[ "$store" == etcd ]]; then
  etcd_pid=$(pgrep -f "etcd --name bench --data-dir $work/etcd" | head -1)
  echo "== etcd: RSS $(awk '/VmRSS/ {print $2, $3}' /proc/$etcd_pid/status), CPU $(ps -o time= -p $etcd_pid), data $(du -sh "$work/etcd" | cut -f1)"
fi
grep "round" "$work/aggregator.log" | tail -n 2
