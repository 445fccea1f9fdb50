#!/usr/bin/env bash
# Whole-system load test: kubestat-sim (1,000 nodes × 30 pods by default, each kubelet on
# its own loopback address) scraped by a real kubestat-aggregator every 10 s, then wrk
# (with bench/scripts/rest_load.lua) against the aggregator's REST API while it keeps scraping:
# one namespace's 30 pods and one node's 30 pods at 200 requests/s, and the all-nodes lists
# at 20 requests/s (dashboards, the HPA) and then back to back (closed loop, 4 at a time).
# The metrics/v1alpha1 all-nodes list is asked for twice each way: as it is, and with
# "Accept-Encoding: gzip", as Go clients (kubectl, client-go) ask for every answer.
# The simulator deals the Deployment pods over NODES × (PODS_PER_NODE - 2) / 30 namespaces
# (--tenant-namespaces), so each tenant-NNNN namespace holds 30 pods.
#
#   [BUSY_CORES=N] bench/scripts/system_load.sh [BUILD_DIR] [NODES] [PODS_PER_NODE] [DURATION]
#
# BUSY_CORES=N keeps N busy loops (nice 0) running while wrk runs, to see the answers on a
# machine whose cores are taken by something else. Default: 0
# The aggregator serves HTTPS (a self-signed pair) and authenticates and authorizes every
# request as in production: wrk and curl send a bearer token from a token file, and a rules
# file grants that user node and pod metrics, so the figures include TLS and authorization.
# Prints the rates and latency percentiles, then the aggregator's CPU time and RSS.
set -euo pipefail

build="${1:-build}"
nodes="${2:-1000}"
pods="${3:-30}"
duration="${4:-30s}"
here="$(cd "$(dirname "$0")" && pwd)"
sim="$build/sim/kubestat-sim"
agg="$build/aggregator/kubestat-aggregator"
[[ -x "$sim" && -x "$agg" ]] || { echo "build $sim and $agg first" >&2; exit 1; }
source "$here/lib.sh"

busy_cores="${BUSY_CORES:-0}"
bench_init load

tenants=$((nodes * (pods - 2) / 30))
((tenants > 0)) || tenants=1
port=$(free_port)
start_sim "$sim" --nodes="$nodes" --pods-per-node="$pods" --tenant-namespaces="$tenants" \
  --metrics-backend="https://127.0.0.1:$port"

bench_user loadtest '- users: [loadtest]' '  verbs: [get, list]' \
  '  apiGroups: [metrics.k8s.io, metrics]' '  resources: [nodes, pods]'
start_aggregator "$agg" "$port"

# How many times the answer at URL $1 holds the text $2.
auth=(-H "Authorization: Bearer $token")
count() { curl -kfs "${auth[@]}" "$1" 2>/dev/null | grep -o "$2" | grep -c . || true; }

beta_nodes="https://127.0.0.1:$port/apis/metrics.k8s.io/v1beta1/nodes"
# Ready, and every node has a cpu rate (two rounds).
wait_nodes "$beta_nodes" "$nodes" "$work/aggregator.log"
grep "round" "$work/aggregator.log" | tail -n 2

script="$here/rest_load.lua"
namespace="https://127.0.0.1:$port/apis/metrics.k8s.io/v1beta1/namespaces/tenant-0007/pods"
node="https://127.0.0.1:$port/apis/metrics.k8s.io/v1beta1/pods?fieldSelector=spec.nodeName%3Dnode-0007"
alpha_nodes="https://127.0.0.1:$port/apis/metrics/v1alpha1/nodes"
echo "one namespace's answer: $(count "$namespace" '"containers"') pods;" \
  "one node's answer: $(count "$node" '"containers"') pods"
echo "v1alpha1 all nodes: $(curl -kfs "${auth[@]}" "$alpha_nodes" | wc -c) bytes as they are," \
  "$(curl -kfs "${auth[@]}" -H 'Accept-Encoding: gzip' "$alpha_nodes" | wc -c) bytes gzip," \
  "$(curl -kfs "${auth[@]}" --compressed "$alpha_nodes" | grep -o '"machine"' | grep -c .) nodes in the gzip answer"
if ((busy_cores > 0)); then
  echo "== $busy_cores busy loop(s) running from here on"
  for ((i = 0; i < busy_cores; i++)); do
    bash -c 'while :; do :; done' &
    pids+=($!)
  done
fi
gzip_header=(-H "Accept-Encoding: gzip")
echo "== (a) one namespace's pods (tenant-0007), v1beta1, target 200 req/s (2 threads, 4 connections)"
wrk --latency "${auth[@]}" -s "$script" -t2 -c4 -d "$duration" "$namespace" -- 200 2
echo "== (a2) one node's pods (fieldSelector=spec.nodeName), v1beta1, target 200 req/s (2 threads, 4 connections)"
wrk --latency "${auth[@]}" -s "$script" -t2 -c4 -d "$duration" "$node" -- 200 2
echo "== (b0) all $nodes nodes, v1beta1, target 20 req/s (2 threads, 4 connections)"
wrk --latency "${auth[@]}" -s "$script" -t2 -c4 -d "$duration" "$beta_nodes" -- 20 2
echo "== (c0) all $nodes nodes, metrics/v1alpha1 (every window), target 20 req/s (2 threads, 4 connections)"
wrk --latency "${auth[@]}" -s "$script" -t2 -c4 -d "$duration" "$alpha_nodes" -- 20 2
echo "== (c0z) all $nodes nodes, metrics/v1alpha1, gzip, target 20 req/s (2 threads, 4 connections)"
wrk --latency "${auth[@]}" -s "$script" -t2 -c4 -d "$duration" "${gzip_header[@]}" "$alpha_nodes" -- 20 2
echo "== (b) all $nodes nodes, v1beta1, closed loop (2 threads, 4 connections)"
wrk --latency "${auth[@]}" -s "$script" -t2 -c4 -d "$duration" "$beta_nodes"
echo "== (c) all $nodes nodes, metrics/v1alpha1 (every window), closed loop (2 threads, 4 connections)"
wrk --latency "${auth[@]}" -s "$script" -t2 -c4 -d "$duration" "$alpha_nodes"
echo "== (cz) all $nodes nodes, metrics/v1alpha1, gzip, closed loop (2 threads, 4 connections)"
wrk --latency "${auth[@]}" -s "$script" -t2 -c4 -d "$duration" "${gzip_header[@]}" "$alpha_nodes"

echo "== aggregator process"
ps -o pid,rss,time,args -p "$agg_pid" | cut -c1-100
echo "rounds while under load:"
grep "round" "$work/aggregator.log" | tail -n 4
