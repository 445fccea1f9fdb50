#!/usr/bin/env bash
# What gRPC watchers cost the aggregator: kubestat-sim (NODES × PODS_PER_NODE) scraped by a
# real kubestat-aggregator every 10 s, measured over SECONDS of steady state first without
# a watcher and then with WATCHERS Watch streams of every node and pod
# (kubestat-grpc-watchers, as the bridge watches), from /proc.
#
#   bench/scripts/watch_load.sh [BUILD_DIR] [NODES] [PODS_PER_NODE] [WATCHERS] [SECONDS]
#   defaults: build 500 30 8 60
#
# Prints, for each span: the aggregator's CPU (cores), its RSS at the span's end, and for
# the span with watchers the events they read, the events per second and the aggregator's
# CPU added per event delivered (µs: the span's CPU less the span without watchers, over
# the events). The watchers' snapshots are read before the span starts.
set -euo pipefail

build="${1:-build}"
nodes="${2:-500}"
pods="${3:-30}"
watchers="${4:-8}"
seconds="${5:-60}"
here="$(cd "$(dirname "$0")" && pwd)"
sim="$build/sim/kubestat-sim"
agg="$build/aggregator/kubestat-aggregator"
watch="$build/bench/kubestat-grpc-watchers"
for b in "$sim" "$agg" "$watch"; do
  [[ -x "$b" ]] || { echo "build $b first" >&2; exit 1; }
done
source "$here/lib.sh"
bench_init watch

hz=$(getconf CLK_TCK)
rss_mib() { echo $(($(rss_kib "$1") / 1024)); }

tenants=$((nodes * (pods - 2) / 30))
((tenants > 0)) || tenants=1
port=$(free_port)
grpc_port=$(free_port)
start_sim "$sim" --nodes="$nodes" --pods-per-node="$pods" --tenant-namespaces="$tenants" \
  --kubelet-address-mode=ports --kubelet-port=0
bench_user watch '- users: [watch]' '  verbs: [get, list, watch]' \
  '  apiGroups: [metrics.k8s.io, metrics]' '  resources: [nodes, pods]'
start_aggregator "$agg" "$port" --grpc-address=127.0.0.1 --grpc-port="$grpc_port" \
  --kubelet-use-node-status-port
wait_nodes "https://127.0.0.1:$port/apis/metrics.k8s.io/v1beta1/nodes" "$nodes" \
  "$work/aggregator.log"

# The span without watchers.
cpu0=$(cpu_ticks "$agg_pid")
sleep "$seconds"
cpu1=$(cpu_ticks "$agg_pid")
rss_without=$(rss_mib "$agg_pid")

# The watchers: their snapshots first (one report per second; the first line whose every
# stream has its snapshot starts the span).
printf '%s\n' "$token" >"$work/token"
"$watch" --address="127.0.0.1:$grpc_port" --token-file="$work/token" --streams="$watchers" \
  --report-every=1s >"$work/watchers.out" 2>"$work/watchers.log" &
watch_pid=$!
pids+=("$watch_pid")
events_at() { grep -o 'events=[0-9]*' "$work/watchers.out" | tail -n 1 | cut -d= -f2; }
for _ in $(seq 600); do
  grep -q "snapshots=$watchers\b" "$work/watchers.out" 2>/dev/null && break
  sleep 1
done
grep -q "snapshots=$watchers\b" "$work/watchers.out" ||
  { echo "the watchers never read their snapshots"; tail "$work/watchers.log"; exit 1; }
events0=$(events_at)
cpu2=$(cpu_ticks "$agg_pid")
sleep "$seconds"
cpu3=$(cpu_ticks "$agg_pid")
events1=$(events_at)
rss_with=$(rss_mib "$agg_pid")
errors=$(grep -o 'errors=[0-9]*' "$work/watchers.out" | tail -n 1 | cut -d= -f2)

python3 - "$hz" "$seconds" "$nodes" "$watchers" "$cpu0" "$cpu1" "$cpu2" "$cpu3" \
  "$events0" "$events1" "$rss_without" "$rss_with" "$errors" <<'EOF'
import sys
hz, seconds, nodes, watchers = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
c0, c1, c2, c3 = (float(x) / hz for x in sys.argv[5:9])
e0, e1 = int(sys.argv[9]), int(sys.argv[10])
rss_without, rss_with, errors = sys.argv[11], sys.argv[12], sys.argv[13]
without, with_ = (c1 - c0) / seconds, (c3 - c2) / seconds
events = e1 - e0
print(f"aggregator, {nodes} nodes, no watcher: {without:.3f} cores, RSS {rss_without} MiB")
print(f"aggregator, {watchers} watchers: {with_:.3f} cores, RSS {rss_with} MiB; "
      f"{events} events read ({events / seconds:.0f}/s), stream errors {errors}")
if events > 0:
    print(f"added CPU per event delivered: {(with_ - without) * seconds / events * 1e6:.2f} us")
EOF
