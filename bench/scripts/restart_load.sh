#!/usr/bin/env bash
# Restart with a day in the store, measured from outside: a real kubestat-aggregator started
# on STORE_DIR (a store holding a day of NODES nodes, as `ingest_bench --rebuild_nodes=NODES
# --store_dir=STORE_DIR` leaves it) against kubestat-sim with the same NODES, timed from the
# process start to /readyz 200 (the store opened and every window rebuilt), with its RSS and
# CPU from /proc at that moment; then until every node is listed on metrics.k8s.io again, and
# the process's memory then by part (the aggregator's kubestat_*_memory_bytes and
# kubestat_heap_*_bytes against the resident set it reads with them).
#
#   bench/scripts/restart_load.sh [BUILD_DIR] [NODES] STORE_DIR [cold]
#
# `cold` drops the page cache first (root only), so the store is read from the device.
# The store's samples are kept: the aggregator runs with a retention long enough to hold
# them whatever their age, so the store can be used again. The time to ready is a restart's
# only when the store's newest samples are recent and name the simulator's nodes and pods:
# make it with `ingest_bench --scrape_cost=0 --day_nodes=0 --rebuild_nodes=NODES
# --rebuild_workload=sim --rebuild_end=now --store_dir=STORE_DIR` (the simulator's model over
# the 25 h ending now) and run this right after. That fill takes long (75-135 minutes for
# 5,000 nodes), so the store is already that old when it ends: the same command with
# --rebuild_end=extend brings it up to the present (it appends the steps since the store's
# newest scrape, and again until less than a step is missing) before this runs. On a store
# dated in the past (ingest_bench's default) the first round expires every window against
# the store, reading the whole day again, and /readyz waits for that round; on one with
# other node names every stored node is rebuilt and then retired. Needs a descriptor limit
# of about 3 per node for the simulator.
set -euo pipefail

build="${1:-build}"
nodes="${2:-5000}"
store="${3:?usage: bench/scripts/restart_load.sh [BUILD_DIR] [NODES] STORE_DIR [cold]}"
cold="${4:-}"
here="$(cd "$(dirname "$0")" && pwd)"
sim="$build/sim/kubestat-sim"
agg="$build/aggregator/kubestat-aggregator"
[[ -x "$sim" && -x "$agg" ]] || { echo "build $sim and $agg first" >&2; exit 1; }
[[ -d "$store" ]] || { echo "no store in $store" >&2; exit 1; }
source "$here/lib.sh"
bench_init restart

port=$(free_port)
# A store filled without churn (ingest_bench --rebuild_churn=none) names pods that are never
# replaced: so does the simulator then.
sim_churn=()
if head -n 1 "$store/FILLED_BY_INGEST_BENCH" 2>/dev/null | grep -q nochurn; then
  sim_churn=(--pod-lifetime=0)
fi
start_sim "$sim" --nodes="$nodes" --pods-per-node=30 --tenant-namespaces=$((nodes * 28 / 30)) \
  "${sim_churn[@]}"
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
# /readyz every 0.1 s over one kept-alive connection: a curl per poll (a process and a TLS
# handshake each time, on both sides) took about 9% of the two cores from the restart it
# timed.
if ! python3 - "$port" "$agg_pid" <<'EOF'; then
import http.client, ssl, sys, time
port, pid = int(sys.argv[1]), sys.argv[2]
context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE

def alive():
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False

connection = None
while alive():
    try:
        if connection is None:
            connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
        connection.request("GET", "/readyz")
        answer = connection.getresponse()
        answer.read()
        if answer.status == 200:
            sys.exit(0)
    except (OSError, http.client.HTTPException):
        if connection is not None:
            connection.close()
        connection = None
    time.sleep(0.1)
sys.exit(1)
EOF
  echo "the aggregator exited"
  tail -n 20 "$work/aggregator.log"
  exit 1
fi
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

# The day's memory by part, from the aggregator's own figures, counted once a minute (and
# at the first publications after start) after the allocator's free pages are given back:
# windows, RocksDB, the allocator's blocks in use (those two and everything else) and free,
# and the resident set read with them. The next count after every node is listed is taken.
memory_count() {
  curl -kfs -H "Authorization: Bearer $token" "https://127.0.0.1:$port/metrics" \
    >"$work/aggregator-metrics" || true
  awk '/^kubestat_resident_memory_bytes / {print $2}' "$work/aggregator-metrics"
}
counted=$(memory_count)
for _ in $(seq 1 90); do
  sleep 1
  [[ "$(memory_count)" != "$counted" ]] && break
done
python3 - "$work/aggregator-metrics" "$nodes" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
nodes = int(sys.argv[2])
def gauge(name):
    m = re.search(r"^" + name + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else None
mib = lambda b: b / 1048576
rss = gauge("kubestat_resident_memory_bytes")
if rss is None:
    print("== memory: the aggregator reported no resident set")
    sys.exit(0)
print(f"== memory: RSS {mib(rss):.0f} MiB ({mib(rss) / nodes:.3f} MiB per node), read with the figures below")
parts = [("windows and ingest state", "kubestat_window_memory_bytes"),
         ("RocksDB (memtables, block cache, indexes)", "kubestat_store_memory_bytes"),
         ("allocator: blocks in use (all data)", "kubestat_heap_in_use_bytes"),
         ("allocator: held free (resident or given back)", "kubestat_heap_free_bytes")]
for label, name in parts:
    v = gauge(name)
    print(f"  {label}: " + ("absent" if v is None else f"{mib(v):.0f} MiB ({mib(v) / nodes:.3f} per node)"))
w, s, u, f = (gauge(n) for _, n in parts)
if None not in (w, s, u, f):
    print(f"  in use besides windows and RocksDB (snapshot, watch hub, discovery, requests): {mib(u - w - s):.0f} MiB")
    print(f"  RSS beyond the blocks in use (free pages still resident, code, stacks): {mib(rss - u):.0f} MiB")
released = gauge("kubestat_heap_released_bytes_total")
took = gauge("kubestat_heap_release_seconds")
if released is not None and took is not None:
    print(f"  free pages given back since start: {mib(released):.0f} MiB; the last release took {took * 1000:.0f} ms")
EOF
# The RSS by kind of mapping: anonymous (heap, arenas, stacks) against file-backed (code,
# libraries, any mapped store file), and the largest mappings.
echo "== threads: $(awk '/^Threads/ {print $2}' "/proc/$agg_pid/status")"
python3 - "/proc/$agg_pid/smaps" <<'EOF'
import sys
maps, cur = [], None
for line in open(sys.argv[1]):
    f = line.split()
    if "-" in f[0] and len(f) >= 5 and ":" in f[3]:
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        cur = [f[5] if len(f) > 5 else "[anon]", (hi - lo) // 1024, 0, 0]
        maps.append(cur)
    elif f[0] == "Rss:":
        cur[2] = int(f[1])
    elif f[0] == "Anonymous:":
        cur[3] = int(f[1])
anon = sum(m[3] for m in maps)
total = sum(m[2] for m in maps)
print(f"== RSS by mapping: {total // 1024} MiB, anonymous {anon // 1024} MiB,"
      f" file-backed {(total - anon) // 1024} MiB, {len(maps)} mappings")
by = {}
for name, _, rss, _ in maps:
    by.setdefault(name, [0, 0])
    by[name][0] += rss
    by[name][1] += 1
for name, (rss, n) in sorted(by.items(), key=lambda kv: -kv[1][0])[:8]:
    print(f"  {name}: {rss // 1024} MiB in {n} mappings")
# Unnamed mappings by size: a thread's stack is 8 MiB (beside a 4 KiB guard), a malloc
# arena's heap at most 64 MiB; other sizes are blocks mapped on their own or by a library.
kinds = {}
for name, size, rss, _ in maps:
    if name != "[anon]":
        continue
    kind = ("8 MiB (thread stacks)" if size == 8192 else
            "64 MiB (malloc arena heaps)" if size == 65536 else
            "other sizes")
    kinds.setdefault(kind, [0, 0])
    kinds[kind][0] += rss
    kinds[kind][1] += 1
for kind, (rss, n) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
    print(f"  unnamed, {kind}: {rss // 1024} MiB in {n} mappings")
others = sorted(((m[2], m[1]) for m in maps if m[0] == "[anon]" and m[1] not in (8192, 65536)), reverse=True)
print("  largest of other sizes (RSS/size MiB): " + ", ".join(f"{r // 1024}/{s // 1024}" for r, s in others[:10]))
EOF
