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
#   bench/http_abuse.sh [BUILD_DIR] [NODES] [CONNECTIONS]
set -euo pipefail

build="${1:-build}"
nodes="${2:-100}"
connections="${3:-20000}"
sim="$build/sim/kubestat-sim"
agg="$build/aggregator/kubestat-aggregator"
probe="$build/bench/kubestat-http-probe"
for b in "$sim" "$agg" "$probe"; do [[ -x "$b" ]] || { echo "build $b first" >&2; exit 1; }; done

work="$(mktemp -d -t kubestat-abuse-XXXXXX)"
pids=()
cleanup() {
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
health_port=$(free_port)
"$sim" --nodes="$nodes" --pods-per-node=30 --kubeconfig-out="$work/kubeconfig" \
  >"$work/sim.log" 2>&1 &
pids+=($!)
for _ in $(seq 600); do grep -q READY "$work/sim.log" && break; sleep 0.2; done
grep -q READY "$work/sim.log" || { cat "$work/sim.log"; exit 1; }

token="probe-$RANDOM$RANDOM"
echo "$token,prober,1000" >"$work/tokens.csv"
printf '%s\n' 'rules:' '- users: [prober]' '  verbs: [get, list]' \
  '  apiGroups: [metrics.k8s.io, metrics]' '  resources: [nodes, pods]' \
  '- users: [prober]' '  verbs: [get]' '  nonResourceURLs: [/metrics]' >"$work/rules.yaml"
"$agg" --kubeconfig="$work/kubeconfig" --kubelet-scheme=http \
  --kubelet-preferred-address-types=InternalIP --metric-resolution=10s --kubelet-timeout=5s \
  --listen-address=127.0.0.1 --secure-port="$port" --health-port="$health_port" \
  --cert-dir="$work/certs" --token-auth-file="$work/tokens.csv" \
  --authorization-rules-file="$work/rules.yaml" --grpc-port=0 --storage-dir="$work/store" \
  >"$work/aggregator.log" 2>&1 &
agg_pid=$!
pids+=("$agg_pid")
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
