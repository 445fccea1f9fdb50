#!/usr/bin/env bash
# Scale and freshness, measured from outside: kubestat-sim (5,000 nodes × 30 pods by default)
# scraped by a real kubestat-aggregator every 10 s for DURATION seconds, while a probe lists
# every node and every pod on metrics.k8s.io every 5 s (as the HPA and `kubectl top` do;
# their cost is part of the CPU figure measured then) and checks what it gets:
#   - fresh: each object's timestamp (its newest sample) against the time of the answer; an
#     object is fresh when it is at most one resolution plus the kubelet timeout old (plus
#     the second metrics.k8s.io rounds timestamps to); a snapshot that stopped moving shows
#     as ages that grow with the run;
#   - whole: how many of the nodes and pods the simulator serves each list holds.
# Then every pod listed five times in JSON and five in protobuf, alternately, timed. Then the
# aggregator's publish lag and publications (lib.sh's aggregator_figures), the
# rounds (nodes ok, skipped, how long each took), the aggregator's CPU over the
# measured span from /proc (cores, and ms per node scrape) and its RSS, and the simulator's.
# Last, the store's size on disk per node-day at the 10 s resolution, from what the run wrote
# (not compacted yet: a day's store is smaller per node-day, see bench/RESULTS.md).
#
#   bench/scripts/scale_load.sh [BUILD_DIR] [NODES] [PODS_PER_NODE] [DURATION_SECONDS] [QUIET_SECONDS]
#
# Before the probe, QUIET_SECONDS (default 60; 0: none) without any query measure the
# aggregator's CPU per node scrape on the scrape path alone, counted by its
# kubestat_scrapes_total.
#
# The first two rounds (start-up, the first rate) are not measured: the span starts once
# every node is listed. Needs a descriptor limit of about 3 per node for the simulator (one
# listener and one connection per kubelet): 20,000 holds 5,000 nodes.
set -euo pipefail

build="${1:-build}"
nodes="${2:-5000}"
pods="${3:-30}"
duration="${4:-300}"
quiet="${5:-60}"
here="$(cd "$(dirname "$0")" && pwd)"
sim="$build/sim/kubestat-sim"
agg="$build/aggregator/kubestat-aggregator"
[[ -x "$sim" && -x "$agg" ]] || { echo "build $sim and $agg first" >&2; exit 1; }
source "$here/lib.sh"
bench_init scale

tenants=$((nodes * (pods - 2) / 30))
((tenants > 0)) || tenants=1
port=$(free_port)
start_sim "$sim" --nodes="$nodes" --pods-per-node="$pods" --tenant-namespaces="$tenants"
sim_pid="${pids[0]}"
bench_user loadtest '- users: [loadtest]' '  verbs: [get, list]' \
  '  apiGroups: [metrics.k8s.io, metrics]' '  resources: [nodes, pods]' \
  '- users: [loadtest]' '  verbs: [get]' '  nonResourceURLs: [/metrics]'
start_aggregator "$agg" "$port"

# Every node listed: two rounds have given each a rate.
wait_nodes "https://127.0.0.1:$port/apis/metrics.k8s.io/v1beta1/nodes" "$nodes" "$work/aggregator.log"

ticks=$(getconf CLK_TCK)
# The successful node scrapes so far, from the aggregator's own counter.
scrapes_ok() {
  curl -kfs -H "Authorization: Bearer $token" "https://127.0.0.1:$port/metrics" |
    awk '/^kubestat_scrapes_total\{outcome="success"/ {n += $2} END {printf "%d", n}'
}
if ((quiet > 0)); then
  echo "== ${quiet}s without queries: the scrape path alone (fetch, decode, ingest, store, publish)"
  q_ok0=$(scrapes_ok)
  q_cpu0=$(cpu_ticks "$agg_pid")
  q_cs0=$(ctx_switches "$agg_pid")
  q_t0=$(date +%s.%N)
  sleep "$quiet"
  q_ok1=$(scrapes_ok)
  q_cpu1=$(cpu_ticks "$agg_pid")
  q_cs1=$(ctx_switches "$agg_pid")
  q_t1=$(date +%s.%N)
  python3 -c "
import sys
ok, cpu, span = $q_ok1 - $q_ok0, ($q_cpu1 - $q_cpu0) / $ticks, $q_t1 - $q_t0
print(f'aggregator CPU without queries {cpu / span:.2f} cores over {span:.0f}s, {ok} node scrapes'
      + (f', {1000 * cpu / ok:.2f} ms per node scrape' if ok else '')
      + (f', {($q_cs1 - $q_cs0) / ok:.1f} task switches per node scrape' if ok else ''))"
fi
first_round=$(grep -o "round [0-9]*:" "$work/aggregator.log" | tail -n 1 | tr -dc 0-9)
agg_cpu0=$(cpu_ticks "$agg_pid")
sim_cpu0=$(cpu_ticks "$sim_pid")
t0=$(date +%s.%N)

echo "== probing for ${duration}s: every node and every pod listed every 5 s"
python3 - "$port" "$token" "$duration" "$nodes" "$((nodes * pods))" <<'EOF'
import datetime, json, ssl, sys, time, urllib.request

port, token, duration = sys.argv[1], sys.argv[2], float(sys.argv[3])
want = {"nodes": int(sys.argv[4]), "pods": int(sys.argv[5])}
bound = 10 + 5 + 1  # resolution + kubelet timeout + the timestamp's truncation to seconds
context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE

def get(kind):
    request = urllib.request.Request(
        f"https://127.0.0.1:{port}/apis/metrics.k8s.io/v1beta1/{kind}",
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})
    start = time.monotonic()
    with urllib.request.urlopen(request, context=context, timeout=60) as answer:
        body = answer.read()
    # The answer's time is when its last byte came, not after Python parsed it (about 4 s
    # for 150,000 pods).
    at = datetime.datetime.now(datetime.timezone.utc)
    took = time.monotonic() - start
    return json.loads(body), took, at

ages = {"nodes": [], "pods": []}
stale = {"nodes": 0, "pods": 0}
held = {"nodes": [], "pods": []}
took = {"nodes": [], "pods": []}
oldest_by_list = []
end = time.monotonic() + duration
while time.monotonic() < end:
    started = time.monotonic()
    for kind in ("nodes", "pods"):
        listed, seconds, at = get(kind)
        items = listed["items"]
        held[kind].append(len(items))
        took[kind].append(seconds)
        list_ages = [(at - datetime.datetime.fromisoformat(i["timestamp"].replace("Z", "+00:00")))
                     .total_seconds() for i in items]
        ages[kind].extend(list_ages)
        stale[kind] += sum(1 for a in list_ages if a > bound + seconds)
        if kind == "nodes" and list_ages:
            oldest_by_list.append(max(list_ages))
    time.sleep(max(0.0, started + 5 - time.monotonic()))

def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")

for kind in ("nodes", "pods"):
    a = ages[kind]
    print(f"{kind}: {len(held[kind])} lists, held min {min(held[kind])} / median "
          f"{pct(held[kind], 0.5)} of {want[kind]}; list took p50 {pct(took[kind], 0.5):.2f}s "
          f"max {max(took[kind]):.2f}s; age at answer p50 {pct(a, 0.5):.1f}s p99 "
          f"{pct(a, 0.99):.1f}s max {max(a):.1f}s; older than {bound}s + the list's time: "
          f"{stale[kind]} of {len(a)}")
if len(oldest_by_list) >= 2:
    half = len(oldest_by_list) // 2
    print(f"oldest node per list, first half p50 {pct(oldest_by_list[:half], 0.5):.1f}s, "
          f"second half p50 {pct(oldest_by_list[half:], 0.5):.1f}s (growing = frozen)")

# Every pod in each encoding, alternately (kubectl and client-go ask for protobuf first):
# the time to the last byte and the size, under the same scrape load.
encodings = {"json": "application/json", "protobuf": "application/vnd.kubernetes.protobuf"}
times = {name: [] for name in encodings}
sizes = {name: 0 for name in encodings}
for _ in range(5):
    for name, accept in encodings.items():
        request = urllib.request.Request(
            f"https://127.0.0.1:{port}/apis/metrics.k8s.io/v1beta1/pods",
            headers={"Authorization": f"Bearer {token}", "Accept": accept})
        start = time.monotonic()
        with urllib.request.urlopen(request, context=context, timeout=60) as answer:
            body = answer.read()
            kind = answer.headers.get("Content-Type", "")
        times[name].append(time.monotonic() - start)
        sizes[name] = len(body)
        if not kind.startswith(accept):
            print(f"asked for {accept}, got {kind}")
for name in encodings:
    print(f"all pods as {name}: {sizes[name] / 2**20:.1f} MiB, took p50 "
          f"{pct(times[name], 0.5):.2f}s max {max(times[name]):.2f}s over 5 lists")
EOF

t1=$(date +%s.%N)
agg_cpu1=$(cpu_ticks "$agg_pid")
sim_cpu1=$(cpu_ticks "$sim_pid")
aggregator_figures "https://127.0.0.1:$port/metrics"
echo "== rounds measured"
python3 - "$work/aggregator.log" "$first_round" "$agg_cpu0" "$agg_cpu1" "$sim_cpu0" "$sim_cpu1" \
  "$t0" "$t1" "$ticks" <<'EOF'
import re, sys
log, first = sys.argv[1], int(sys.argv[2])
a0, a1, s0, s1, t0, t1, ticks = map(float, sys.argv[3:])
rounds = []
for line in open(log):
    m = re.search(r"round (\d+): (\d+)/(\d+) nodes ok.* (\d+) skipped, took ([0-9.]+)s", line)
    if m and int(m.group(1)) > first:
        rounds.append((int(m.group(2)), int(m.group(3)), int(m.group(4)), float(m.group(5))))
ok = sum(r[0] for r in rounds)
if rounds:
    print(f"{len(rounds)} rounds: {ok} of {sum(r[1] for r in rounds)} node scrapes ok, "
          f"{sum(r[2] for r in rounds)} skipped, {sum(1 for r in rounds if r[0] != r[1])} rounds "
          f"short of all nodes, longest took {max(r[3] for r in rounds):.2f}s")
else:
    print("no round completed")
span = t1 - t0
agg = (a1 - a0) / ticks
print(f"aggregator CPU {agg / span:.2f} cores over {span:.0f}s"
      + (f", {1000 * agg / ok:.2f} ms per node scrape" if ok else ""))
print(f"simulator CPU {(s1 - s0) / ticks / span:.2f} cores")
EOF
echo "aggregator RSS $(awk '/VmRSS/ {printf "%d MiB", $2 / 1024}' "/proc/$agg_pid/status")," \
  "simulator RSS $(awk '/VmRSS/ {printf "%d MiB", $2 / 1024}' "/proc/$sim_pid/status")"
# The store on disk against the node scrapes it holds: its table files (compressed, though
# not yet compacted to the bottom level, where ZSTD takes over from LZ4) and everything
# (with the write-ahead log), as MiB per node-day at the 10 s resolution.
stored_ok=$(scrapes_ok)
python3 - "$work/store" "$stored_ok" <<'EOF'
import os, sys
store, scrapes = sys.argv[1], int(sys.argv[2])
sst = total = 0
for name in os.listdir(store):
    size = os.path.getsize(os.path.join(store, name))
    total += size
    sst += size if name.endswith(".sst") else 0
if scrapes:
    per_day = 8640 / scrapes / 2**20
    print(f"store: {total / 2**20:.0f} MiB on disk ({sst / 2**20:.0f} MiB in table files) for "
          f"{scrapes} node scrapes: {sst * per_day:.2f} MiB per node-day in table files, "
          f"{total * per_day:.2f} with the log")
EOF
