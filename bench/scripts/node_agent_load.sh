#!/usr/bin/env bash
# What the node agents cost: kubestat-sim (NODES × PODS_PER_NODE, each node's kubelet and
# podresources socket on its own loopback address) with one kubestat-node-agent per node,
# reading its socket every 10 s and serving /podresources over HTTPS (token file and rules
# file: the aggregator's token only); then a real kubestat-aggregator scraping every kubelet
# every 10 s, first without the agents and then, on a fresh store, with --node-agent-port.
#
#   bench/scripts/node_agent_load.sh [BUILD_DIR] [NODES] [PODS_PER_NODE] [SECONDS]
#
# Prints, over SECONDS of steady state (after two rounds):
#   - per agent: CPU (% of a core, mean and max over the agents) and RSS (mean and max, and
#     the private part: most of RSS is shared library pages);
#   - the aggregator: CPU per round and RSS without and with the agents, the difference per
#     node scrape, and the agent scrapes' own latency (kubestat_node_agent_scrape_duration).
# Defaults: build 50 30 120.
set -euo pipefail

build="${1:-build}"
nodes="${2:-50}"
pods="${3:-30}"
seconds="${4:-120}"
here="$(cd "$(dirname "$0")" && pwd)"
sim="$build/sim/kubestat-sim"
agg="$build/aggregator/kubestat-aggregator"
agent="$build/agent/kubestat-node-agent"
[[ -x "$sim" && -x "$agg" && -x "$agent" ]] || { echo "build $sim, $agg and $agent first" >&2; exit 1; }
source "$here/lib.sh"
bench_init agents

hz=$(getconf CLK_TCK)
# The part of a process's RSS that is its own (anonymous, private dirty: the rest is shared
# library pages), in KiB; lib.sh's cpu_ticks and rss_kib give its CPU and whole RSS.
private_kib() { awk '/^Private_Dirty/ {print $2}' "/proc/$1/smaps_rollup"; }
node_ip() { echo "127.1.$(($1 / 250)).$(($1 % 250 + 1))"; }
node_name() { printf 'node-%04d' "$1"; }

start_sim "$sim" --nodes="$nodes" --pods-per-node="$pods" --kubelet-port=0 \
  --podresources-dir="$work/podres"

# The agents: one certificate naming every node address; the aggregator's token may read.
bench_user kubestat-aggregator '- users: [kubestat-aggregator]' '  verbs: [get, list]' \
  '  apiGroups: [metrics.k8s.io, metrics]' '  resources: [nodes, pods]' \
  '- users: [kubestat-aggregator]' '  verbs: [get]' '  nonResourceURLs: [/podresources, /metrics]'
printf '%s\n' "$token" >"$work/aggregator.token"
sans="IP:127.0.0.1"
for ((i = 0; i < nodes; i++)); do sans="$sans,IP:$(node_ip "$i")"; done
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=kubestat-node-agent -addext "subjectAltName=$sans" \
  -keyout "$work/agent.key" -out "$work/agent.crt" 2>/dev/null
agent_port=$(free_port)
agent_pids=()
for ((i = 0; i < nodes; i++)); do
  node=$(node_name "$i")
  "$agent" --node-name="$node" --podresources-socket="$work/podres/$node/kubelet.sock" \
    --listen-address="$(node_ip "$i")" --secure-port="$agent_port" \
    --tls-cert-file="$work/agent.crt" --tls-private-key-file="$work/agent.key" \
    --token-auth-file="$work/tokens.csv" --authorization-rules-file="$work/rules.yaml" \
    >"$work/agent-$node.log" 2>&1 &
  agent_pids+=($!)
  pids+=($!)
done

# AGGREGATOR_RUN NAME [FLAGS...]: runs the aggregator on a fresh store for two rounds, then
# measures it (and the agents) over $seconds; sets cpu_per_round, agg_rss_mib.
measure() {
  local name="$1"
  shift
  rm -rf "$work/store" "$work/certs"
  local port
  port=$(free_port)
  start_aggregator "$agg" "$port" --kubelet-use-node-status-port "$@"
  for _ in $(seq 300); do grep -q "round 3:" "$work/aggregator.log" && break; sleep 0.5; done
  grep -q "round 3:" "$work/aggregator.log" || { tail "$work/aggregator.log"; exit 1; }
  local t0 a0 r0 i
  t0=$(cpu_ticks "$agg_pid")
  r0=$(grep -c "round [0-9]*:" "$work/aggregator.log")
  declare -ga agent_t0=()
  for i in "${!agent_pids[@]}"; do agent_t0[i]=$(cpu_ticks "${agent_pids[i]}"); done
  a0=$(date +%s.%N)
  sleep "$seconds"
  local elapsed rounds
  elapsed=$(echo "$(date +%s.%N) - $a0" | bc -l)
  rounds=$(($(grep -c "round [0-9]*:" "$work/aggregator.log") - r0))
  cpu_per_round=$(echo "($(cpu_ticks "$agg_pid") - $t0) / $hz / $rounds" | bc -l)
  agg_rss_mib=$(echo "$(rss_kib "$agg_pid") / 1024" | bc -l)
  echo "== aggregator $name: $rounds rounds in ${elapsed%.*} s, CPU $(printf '%.3f' "$cpu_per_round") s per round" \
    "($(printf '%.1f' "$(echo "$cpu_per_round * 100 / 10" | bc -l)")% of a core at 10 s), RSS $(printf '%.1f' "$agg_rss_mib") MiB"
  grep "round [0-9]*:" "$work/aggregator.log" | tail -n 1
  if [[ "$name" == "with agents" ]]; then
    local sum_cpu=0 max_cpu=0 sum_rss=0 max_rss=0 sum_private=0 c r
    for i in "${!agent_pids[@]}"; do
      c=$(echo "($(cpu_ticks "${agent_pids[i]}") - ${agent_t0[i]}) * 100 / $hz / $elapsed" | bc -l)
      r=$(rss_kib "${agent_pids[i]}")
      sum_private=$((sum_private + $(private_kib "${agent_pids[i]}")))
      sum_cpu=$(echo "$sum_cpu + $c" | bc -l)
      sum_rss=$((sum_rss + r))
      (($(echo "$c > $max_cpu" | bc -l))) && max_cpu=$c
      ((r > max_rss)) && max_rss=$r
    done
    echo "== per agent ($nodes agents, $pods pods per node, polling every 10 s, scraped every 10 s):" \
      "CPU mean $(printf '%.3f' "$(echo "$sum_cpu / $nodes" | bc -l)")% of a core, max $(printf '%.3f' "$max_cpu")%;" \
      "RSS mean $(printf '%.1f' "$(echo "$sum_rss / $nodes / 1024" | bc -l)") MiB, max $(printf '%.1f' "$(echo "$max_rss / 1024" | bc -l)") MiB," \
      "of which its own (private dirty) $(printf '%.1f' "$(echo "$sum_private / $nodes / 1024" | bc -l)") MiB"
    local metrics
    metrics=$(curl -kfs -H "Authorization: Bearer $token" "https://127.0.0.1:$port/metrics")
    grep -E '^kubestat_node_agent_scrapes_total' <<<"$metrics" | sed 's/^/   /'
    local sum count
    sum=$(grep -E '^kubestat_node_agent_scrape_duration_seconds_sum\{result="success"\}' <<<"$metrics" | awk '{print $2}')
    count=$(grep -E '^kubestat_node_agent_scrape_duration_seconds_count\{result="success"\}' <<<"$metrics" | awk '{print $2}')
    echo "   agent scrape latency (fetch and decode, wall): mean $(printf '%.2f' "$(echo "$sum * 1000 / $count" | bc -l)") ms over $count scrapes"
    echo "   one agent's answer: $(curl -fs --cacert "$work/agent.crt" -H "Authorization: Bearer $token" \
      "https://$(node_ip 0):$agent_port/podresources" | wc -c) bytes"
  fi
  kill -TERM "$agg_pid"
  wait "$agg_pid" 2>/dev/null || true
}

measure "without agents"
base_cpu=$cpu_per_round
base_rss=$agg_rss_mib
measure "with agents" --node-agent-port="$agent_port" \
  --node-agent-certificate-authority="$work/agent.crt" --node-agent-token-file="$work/aggregator.token"
echo "== the aggregator's added cost: $(printf '%.0f' "$(echo "($cpu_per_round - $base_cpu) * 1000000 / $nodes" | bc -l)") µs of CPU per node scrape," \
  "RSS $(printf '%+.1f' "$(echo "$agg_rss_mib - $base_rss" | bc -l)") MiB for $nodes nodes"
