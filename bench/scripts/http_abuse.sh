#!/usr/bin/env bash
# The aggregator under attack, as real processes on loopback: kubestat-sim (NODES nodes ×
# 30 pods) scraped by kubestat-aggregator (HTTPS, tokens and rules as in production, a health
# listener of its own), then kubestat-http-probe against its main port:
#   (a) a request declaring a 1 GiB body and streaming it,
#   (b) a 256 MiB header line,
#   (c) 20,000 connections opened and held at once (idle, partial heads, trickling heads)
#       while /livez and /readyz are asked on the health port,
#   (d) how long idle and partial connections stay open.
# Prints the probe's figures (each with the aggregator's RSS) and the aggregator's rounds
# during the attack, which must keep completing.
#
#   bench/scripts/http_abuse.sh [BUILD_DIR] [NODES] [CONNECTIONS]
set -euo pipefail

build="${1:-build}"
nodes="${2:-100}"
connections="${3:-20000}"
sim="$build/sim/kubestat-sim"
agg="$build/aggregator/kubestat-aggregator"
probe="$build/bench/kubestat-http-probe"
source "$(dirname "$0")/lib.sh"
for b in "$sim" "$agg" "$probe"; do [[ -x "$b" ]] || { echo "build $b first" >&2; exit 1; }; done

bench_init abuse
port=$(free_port)
health_port=$(free_port)
start_sim "$sim" --nodes="$nodes" --pods-per-node=30

bench_user prober '- users: [prober]' '  verbs: [get, list]' \
  '  apiGroups: [metrics.k8s.io, metrics]' '  resources: [nodes, pods]' \
  '- users: [prober]' '  verbs: [get]' '  nonResourceURLs: [/metrics]'
start_aggregator "$agg" "$port" --health-port="$health_port"
for _ in $(seq 300); do
  curl -kfs "https://127.0.0.1:$health_port/readyz" >/dev/null 2>&1 && grep -q "round 1:" "$work/aggregator.log" && break
  sleep 0.2
done
grep "round 1:" "$work/aggregator.log" || { tail "$work/aggregator.log"; exit 1; }
echo "aggregator RSS before: $(awk '/VmRSS/ {print $2, $3}' /proc/$agg_pid/status)"

"$probe" --url "https://127.0.0.1:$port" --health-url "https://127.0.0.1:$health_port" \
  --pid "$agg_pid" --token "$token" --connections "$connections"

echo "aggregator RSS after: $(awk '/VmRSS/ {print $2, $3}' /proc/$agg_pid/status)"
echo "rounds during the attack:"
grep "round" "$work/aggregator.log" | tail -n 8
echo "rejections counted by the aggregator:"
curl -kfs -H "Authorization: Bearer $token" "https://127.0.0.1:$port/metrics" 2>/dev/null |
  grep -E '^kubestat_http_(rejected_requests_total|connections_total)' || true
