#!/usr/bin/env bash
# Restart with a day in the store, measured from outside: a real kubestat-aggregator started
# on STORE_DIR (a store holding a day of NODES nodes, as `ingest_bench --rebuild_nodes=NODES
# --store_dir=STORE_DIR` leaves it) against kubestat-sim with the same NODES, timed from the
# process start to /readyz 200 (the store opened and every window rebuilt), with its RSS and
# CPU from /proc at that moment; then until every node is listed on metrics.k8s.io again, and
# the process's memory then by part (the aggregator's kubestat_*_memory_bytes and
# kubestat_heap_*_bytes against its RSS).
#
#   bench/restart_load.sh [BUILD_DIR] [NODES] STORE_DIR [cold]
#
# `cold` drops the page cache first (root only), so the store is read from the device.
# The store's samples are kept: the aggregator runs with a retention long enough to hold
# them whatever their age, so the store can be used again. The time to ready is a restart's
# only when the store's newest samples are recent and name the simulator's nodes and pods:
# make it with `ingest_bench --scrape_cost=0 --day_nodes=0 --rebuild_nodes=NODES
# --rebuild_workload=sim --rebuild_end=now --store_dir=STORE_DIR` (the simulator's model over
# the 25 h ending now) and run this right after. On a store dated in the past (ingest_bench's
# default) the first round expires every window against the store, reading the whole day
# again, and /readyz waits for that round; on one with other node names every stored node
# is rebuilt and then retired. Needs a descriptor limit of about 3 per node for the
# simulator.
set -euo pipefail

build="${1:-build}"
nodes="${2:-5000}"
store="${3:?usage: bench/restart_load.sh [BUILD_DIR] [NODES] STORE_DIR [cold]}"
cold="${4:-}"
here="$(cd "$(dirname "$0")" && pwd)"
sim="$build/sim/kubestat-sim"
agg="$build/aggregator/kubestat-aggregator"
[[ -x "$sim" && -x "$agg" ]] || { echo "build $sim and $agg first" >&2; exit 1; }
[[ -d "$store" ]] || { echo "no store in $store" >&2; exit 1; }
source "$here/lib.sh"
bench_init restart

port=$(free_port)
start_sim "$sim" --nodes="$nodes" --pods-per-node=30 --tenant-namespaces=$((nodes * 28 / 30))
bench_user restart '- users: [restart]' '  verbs: [get, list]' \
  '  apiGroups: [metrics.k8s.io]' '  resources: [nodes]' \
  '- users: [restart]' '  verbs: [get]' '  nonResourceURLs: [/metrics]'
if [[ "$cold" == cold ]]; then
  sync
  echo 3 >/proc/sys/vm/drop_caches
fi
store_mib=$(du -sm "$store" | cut -f1)
ticks=$(getconf CLK_TCK)
start=$(date +%s%N)
# 100,000 hours: the store's samples are older than any default retention.
start_aggregator "$agg" "$port" --storage-dir="$store" --retention=100000h
until curl -kfs "https://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
  kill -0 "$agg_pid" 2>/dev/null || { echo "the aggregator exited"; tail -n 20 "$work/aggregator.log"; exit 1; }
  sleep 0.1
done
ready_ms=$((($(date +%s%N) - start) / 1000000))
cpu_s=$(awk -v t="$ticks" '{printf "%.1f", ($14 + $15) / t}' "/proc/$agg_pid/stat")
rss_mib=$(awk '/VmRSS/ {printf "%d", $2 / 1024}' "/proc/$agg_pid/status")
read_mib=$(awk '/read_bytes/ {printf "%d", $2 / 1048576}' "/proc/$agg_pid/io")
echo "== ready in $((ready_ms / 1000)).$(printf '%03d' $((ready_ms % 1000))) s" \
  "(store ${store_mib} MiB, ${cold:-warm} page cache): CPU ${cpu_s} s, RSS ${rss_mib} MiB" \
  "($((rss_mib * 1024 / nodes)) KiB per node), read ${read_mib} MiB from the device"
grep -E "rebuil|restored" "$work/aggregator.log" | head -n 5 || true

# Then live: every node listed again.
wait_nodes "https://127.0.0.1:$port/apis/metrics.k8s.io/v1beta1/nodes" "$nodes" "$work/aggregator.log"
echo "== every node listed $((($(date +%s%N) - start) / 1000000)) ms after the start;" \
  "RSS then $(awk '/VmRSS/ {printf "%d MiB", $2 / 1024}' "/proc/$agg_pid/status")"

# The day's memory by part, from the aggregator's own figures (counted at the first
# publications after start, then once a minute): windows, RocksDB, the allocator's blocks in
# use (those two and everything else) and free, against the RSS.
curl -kfs -H "Authorization: Bearer $token" "https://127.0.0.1:$port/metrics" \
  >"$work/aggregator-metrics" || true
rss_kib_now=$(awk '/VmRSS/ {print $2}' "/proc/$agg_pid/status")
python3 - "$work/aggregator-metrics" "$rss_kib_now" "$nodes" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
rss = int(sys.argv[2]) * 1024
nodes = int(sys.argv[3])
def gauge(name):
    m = re.search(r"^" + name + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else None
parts = [("windows and ingest state", "kubestat_window_memory_bytes"),
         ("RocksDB (memtables, block cache, indexes)", "kubestat_store_memory_bytes"),
         ("allocator: blocks in use (all data)", "kubestat_heap_in_use_bytes"),
         ("allocator: held free", "kubestat_heap_free_bytes")]
mib = lambda b: b / 1048576
print(f"== memory: RSS {mib(rss):.0f} MiB ({mib(rss) / nodes:.3f} MiB per node)")
for label, name in parts:
    v = gauge(name)
    print(f"  {label}: " + ("absent" if v is None else f"{mib(v):.0f} MiB ({mib(v) / nodes:.3f} per node)"))
w, s, u, f = (gauge(n) for _, n in parts)
if None not in (w, s, u, f):
    print(f"  in use besides windows and RocksDB (snapshot, watch hub, discovery, requests): {mib(u - w - s):.0f} MiB")
    print(f"  RSS beyond the allocator's (code, stacks, library mappings, pages not yet touched back): {mib(rss - u - f):.0f} MiB")
EOF
