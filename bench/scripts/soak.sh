#!/usr/bin/env bash
# Soak: the whole system as real processes on loopback for DURATION minutes under a steady
# load, sampled every SAMPLE seconds, to show that nothing grows without bound.
#
#   bench/scripts/soak.sh [BUILD_DIR] [NODES] [PODS_PER_NODE] [DURATION_MINUTES] [SAMPLE_SECONDS]
#   defaults: build 1000 30 120 60
#
# Processes (as bench/scripts/apiserver_load.sh starts them, but each kubelet on a free port of
# 127.0.0.1): kubestat-sim (NODES × PODS_PER_NODE) scraped by kubestat-aggregator every 10 s
# (HTTPS, gRPC on loopback), kubestat-bridge following the aggregator's gRPC Watch and
# pushing into kubestat-apiserver (memory store).
# Once the apiserver holds every node, the load runs for the whole duration, each client
# started again 1 s after it exits (counted in `restarts`):
#   - queries: every 5 s, the aggregator's metrics.k8s.io/v1beta1 list of all nodes and of
#     all pods (as `kubectl top` and the HPA read), one namespace's pods (tenant-0000), and one
#     node on metrics/v1alpha1 with its windows; an answer other than HTTP 200 is an error;
#   - gRPC watchers: KUBESTAT_SOAK_GRPC_WATCHERS (default 8) Watch streams of every node and
#     pod on the aggregator, each reading every event (bench/grpc_watchers.cc);
#   - apiserver watches: KUBESTAT_SOAK_API_WATCHERS (default 4) `curl -N` watches of every
#     pod on the apiserver (they end at its --watch-timeout, 30 min, and are started again).
#
# Every SAMPLE seconds one row goes to $work/samples.tsv (and to the terminal): for each of
# sim, aggregator, bridge and apiserver its RSS (KiB, VmRSS), open descriptors, threads and
# CPU seconds so far (utime + stime); the aggregator's store on disk (KiB, du: the blocks
# allocated, RocksDB's preallocated write-ahead log included, and --apparent-size: the
# bytes its files hold, which shows the log's growth before the blocks do); the queries
# asked and failed, the gRPC watchers' events, stream reconnects and stream errors, the
# apiserver watches' events, and the clients' restarts, all totals since the start.
#
# How to read the summary: per process and figure, first, last, max, and the least-squares
# slope per hour over the whole run and over its second half, also in percent of the mean
# (of the same span) per hour. What fills fills during the first part: the aggregator's
# 10 s, 1 m and then 1 h windows, and the apiserver's watch history (its newest 100,000
# events, which NODES × (PODS_PER_NODE + 1) objects every 10 s fill in about 5 minutes at
# 100 nodes, 30 s at 1,000). So a bounded process shows a second-half slope of RSS,
# descriptors and threads near zero: that slope, not the whole run's, says "no growth after
# the windows fill". What grows by design: CPU seconds and the counts are totals (their
# slope is a rate: CPU seconds per hour, 3600 being one core; a rate that rises between
# the halves is the thing to look at); the store holds a day of samples (--retention,
# 26 h), so on a shorter run it grows by about the same amount per hour all along (the
# apparent size; the allocated blocks move in steps) and a store slope that rises between
# the halves would be the sign of a leak there; and the 1d window fills for a day, a slow
# share of the aggregator's RSS that a two-hour run sees as a small positive slope.
#
# Exits non-zero when one of the four processes died during the run (named, with its log's
# tail; sampling stops there) or more than 1% of the queries failed. KUBESTAT_BENCH_KEEP=1
# keeps the work directory (samples.tsv, the clients' output and every log).
set -euo pipefail

build="${1:-build}"
nodes="${2:-1000}"
pods="${3:-30}"
minutes="${4:-120}"
sample="${5:-60}"
grpc_watchers="${KUBESTAT_SOAK_GRPC_WATCHERS:-8}"
api_watchers="${KUBESTAT_SOAK_API_WATCHERS:-4}"
here="$(cd "$(dirname "$0")" && pwd)"
sim="$build/sim/kubestat-sim"
agg="$build/aggregator/kubestat-aggregator"
apiserver="$build/apiserver/kubestat-apiserver"
bridge="$build/bridge/kubestat-bridge"
watchers="$build/bench/kubestat-grpc-watchers"
for b in "$sim" "$agg" "$apiserver" "$bridge" "$watchers"; do
  [[ -x "$b" ]] || { echo "build $b first" >&2; exit 1; }
done
source "$here/lib.sh"
bench_init soak

tenants=$((nodes * (pods - 2) / 30))
((tenants > 0)) || tenants=1
port=$(free_port)
grpc_port=$(free_port)
api_port=$(free_port)
# Kubelets on free loopback ports (the node objects carry them), so that the soak does not
# collide with other runs on the machine.
start_sim "$sim" --nodes="$nodes" --pods-per-node="$pods" --tenant-namespaces="$tenants" \
  --kubelet-address-mode=ports --kubelet-port=0
sim_pid="${pids[0]}"
bench_user soak '- users: [soak]' '  verbs: [get, list, watch, create, update, delete]' \
  '  apiGroups: [metrics.k8s.io, metrics]' '  resources: [nodes, pods, writes]'
start_aggregator "$agg" "$port" --grpc-address=127.0.0.1 --grpc-port="$grpc_port" \
  --kubelet-use-node-status-port
start_apiserver "$apiserver" "$api_port"
start_bridge "$bridge" "$grpc_port" "$api_port"
auth=(-H "Authorization: Bearer $token")
base="https://127.0.0.1:$port"
api="https://127.0.0.1:$api_port"
wait_nodes "$api/apis/metrics.k8s.io/v1beta1/nodes" "$nodes" "$work/bridge.log"

# supervise NAME COMMAND...: runs COMMAND (a program or a function, which sees the
# incarnation number in $run) in its own process group until the end, starting it again 1 s
# after it exits; each exit appends "NAME CODE" to $work/restarts. At exit the supervisor
# stops the group (curl and the awk reading it alike).
: >"$work/restarts"
clients=()
# shellcheck disable=SC2030  # $run is the supervising subshell's, read by the clients there
supervise() {
  local name="$1"
  shift
  (
    set +e -m
    child=""
    trap '[[ -z "$child" ]] || kill -TERM -- "-$child" 2>/dev/null; exit 0' TERM
    for ((run = 0; ; run++)); do
      "$@" &
      child=$!
      wait "$child"
      echo "$name $?" >>"$work/restarts"
      sleep 1
    done
  ) &
  pids+=($!)
  clients+=($!)
}

# Every 5 s, four reads as `kubectl top` and the HPA make them; "CODE URL" per answer.
: >"$work/queries"
# shellcheck disable=SC2031,SC2317  # run through supervise, in its subshell
query_loop() {
  local urls=("$base/apis/metrics.k8s.io/v1beta1/nodes" "$base/apis/metrics.k8s.io/v1beta1/pods"
    "$base/apis/metrics.k8s.io/v1beta1/namespaces/tenant-0000/pods"
    "$base/apis/metrics/v1alpha1/nodes/node-0000")
  local next left code url
  while :; do
    next=$(($(date +%s) + 5))
    for url in "${urls[@]}"; do
      code=$(curl -ks -o /dev/null -w '%{http_code}' -m 30 "${auth[@]}" "$url") || true
      echo "$code $url" >>"$work/queries"
    done
    left=$((next - $(date +%s)))
    ((left <= 0)) || sleep "$left"
  done
}

# shellcheck disable=SC2031,SC2317  # run through supervise, in its subshell
grpc_watch() {
  exec "$watchers" --address="127.0.0.1:$grpc_port" --token-file="$work/token" \
    --streams="$grpc_watchers" --report-every="${sample}s" \
    >"$work/grpc-watchers.$run.out" 2>>"$work/grpc-watchers.log"
}

# One watch of every pod on the apiserver; the events read so far, every 200 and at the
# end, in $work/watch.N.RUN.count.
# shellcheck disable=SC2031,SC2317  # run through supervise, in its subshell
api_watch() {
  curl -kfsN "${auth[@]}" "$api/apis/metrics/v1alpha1/pods?watch=1" 2>>"$work/watch.log" |
    awk -v out="$work/watch.$1.$run.count" \
      '{ n++ } n % 200 == 0 { print n > out; close(out) } END { print n + 0 > out }'
}

supervise queries query_loop
supervise grpc-watchers grpc_watch
for ((i = 0; i < api_watchers; i++)); do supervise "watch-$i" api_watch "$i"; done

ticks=$(getconf CLK_TCK)
# RSS (KiB), descriptors, threads and CPU seconds of process $1, tab-separated.
process_figures() {
  local status fds cpu
  status=$(awk '/^VmRSS:/ { r = $2 } /^Threads:/ { t = $2 } END { print r "\t" t }' \
    "/proc/$1/status")
  fds=$(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
  # Fields after "pid (comm) ": utime and stime are the 12th and 13th.
  cpu=$(sed 's/^.*) //' "/proc/$1/stat" | awk -v hz="$ticks" '{ printf "%.2f", ($12 + $13) / hz }')
  printf '%s\t%s\t%s\t%s' "${status%%$'\t'*}" "$fds" "${status##*$'\t'}" "$cpu"
}
# The gRPC watchers' totals (events, reconnects, errors) over every incarnation's last line.
grpc_totals() {
  local f line e=0 r=0 x=0
  for f in "$work"/grpc-watchers.*.out; do
    [[ -s "$f" ]] || continue
    line=$(tail -n 1 "$f")
    [[ "$line" =~ events=([0-9]+).*reconnects=([0-9]+).*errors=([0-9]+) ]] || continue
    e=$((e + BASH_REMATCH[1])) r=$((r + BASH_REMATCH[2])) x=$((x + BASH_REMATCH[3]))
  done
  printf '%s\t%s\t%s' "$e" "$r" "$x"
}
alive() {
  [[ -r "/proc/$1/stat" ]] && [[ "$(sed 's/^.*) //' "/proc/$1/stat" | cut -d' ' -f1)" != Z ]]
}

names=(sim aggregator bridge apiserver)
procs=("$sim_pid" "$agg_pid" "$bridge_pid" "$api_pid")
header="elapsed_s"
for name in "${names[@]}"; do
  header+="\t${name}_rss_kib\t${name}_fds\t${name}_threads\t${name}_cpu_s"
done
header+="\tstore_kib\tstore_apparent_kib\tqueries\tquery_errors"
header+="\tgrpc_events\tgrpc_reconnects\tgrpc_errors"
header+="\tapi_watch_events\trestarts"
samples="$work/samples.tsv"
echo -e "$header" | tee "$samples"

echo "== soak: $nodes nodes × $pods pods for $minutes min, a sample every ${sample}s," \
  "$grpc_watchers gRPC watchers, $api_watchers apiserver watches, queries every 5 s" >&2
died=()
t0=$(date +%s.%N)
end=$(awk -v t="$t0" -v m="$minutes" 'BEGIN { printf "%.3f", t + 60 * m }')
for ((k = 0; ; k++)); do
  for i in "${!names[@]}"; do alive "${procs[i]}" || died+=("${names[i]}"); done
  ((${#died[@]} == 0)) || break
  row=$(awk -v t="$t0" -v now="$(date +%s.%N)" 'BEGIN { printf "%.0f", now - t }')
  for pid in "${procs[@]}"; do row+=$'\t'"$(process_figures "$pid")"; done
  queries=$(wc -l <"$work/queries")
  errors=$(awk '$1 != 200' "$work/queries" | wc -l)
  # No count file yet (no watch has read 200 events): 0, not an error.
  events=$({ cat "$work"/watch.*.count 2>/dev/null || true; } | awk '{ s += $1 } END { print s + 0 }')
  row+=$'\t'"$(du -sk "$work/store" | cut -f1)"$'\t'"$(du -sk --apparent-size "$work/store" | cut -f1)"
  row+=$'\t'"$queries"$'\t'"$errors"
  row+=$'\t'"$(grpc_totals)"$'\t'"$events"$'\t'"$(wc -l <"$work/restarts")"
  echo "$row" | tee -a "$samples"
  next=$(awk -v t="$t0" -v k="$k" -v s="$sample" 'BEGIN { printf "%.3f", t + (k + 1) * s }')
  awk -v n="$next" -v e="$end" 'BEGIN { exit !(n <= e + 0.5) }' || break
  sleep "$(awk -v n="$next" -v now="$(date +%s.%N)" 'BEGIN { d = n - now; printf "%.3f", (d > 0 ? d : 0) }')"
done

# The load stops with the sampling, so the totals below are the last row's.
for pid in "${clients[@]}"; do
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
done
echo "== summary over $(tail -n 1 "$samples" | cut -f1) s, $(($(wc -l <"$samples") - 1)) samples"
status=0
python3 - "$samples" "$work/restarts" "$work/queries" <<'EOF' || status=1
import collections, sys

samples, restarts, queries = sys.argv[1:4]
rows = [line.rstrip("\n").split("\t") for line in open(samples)]
header, rows = rows[0], [[float(x) for x in r] for r in rows[1:]]
if not rows:
    print("no sample")
    sys.exit(0)
hours = [r[0] / 3600 for r in rows]


def slope(xs, ys):
    """Least-squares slope of ys over xs, and the mean of ys; None when it cannot be had."""
    if len(xs) < 2:
        return None, None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None, my
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx, my


def fmt(value, digits=None):
    if value is None:
        return "-"
    if digits is None:
        digits = 0 if abs(value) >= 100 or value == int(value) else 2
    return f"{value:,.{digits}f}"


def percent(s, mean):
    return None if s is None or not mean else 100 * s / mean


half = [i for i, h in enumerate(hours) if h >= hours[-1] / 2]
print(f"{'figure':<26}{'first':>12}{'last':>12}{'max':>12}{'slope/h':>12}{'%mean/h':>9}"
      f"{'2nd half/h':>12}{'%mean/h':>9}")
for column, name in enumerate(header[1:], start=1):
    ys = [r[column] for r in rows]
    whole, mean = slope(hours, ys)
    second, second_mean = slope([hours[i] for i in half], [ys[i] for i in half])
    print(f"{name:<26}{fmt(ys[0]):>12}{fmt(ys[-1]):>12}{fmt(max(ys)):>12}{fmt(whole):>12}"
          f"{fmt(percent(whole, mean)):>9}{fmt(second):>12}{fmt(percent(second, second_mean)):>9}")
    if name.endswith("_cpu_s") and whole is not None:
        print(f"{'':<26}(cores: {whole / 3600:.3f} over the run, "
              f"{fmt(None if second is None else second / 3600, 3)} over its second half)")

by_name = collections.Counter()
failed = collections.Counter()
for line in open(restarts):
    name, code = line.split()
    by_name[name] += 1
    failed[name] += code != "0"
print("client restarts: " + (", ".join(f"{n} {c} ({failed[n]} with a non-zero exit)"
                                       for n, c in sorted(by_name.items())) or "none"))
codes = collections.Counter(line.split()[0] for line in open(queries) if line.strip())
asked = sum(codes.values())
bad = asked - codes["200"]
share = 100 * bad / asked if asked else 0
print(f"queries: {asked} asked, {bad} failed ({share:.2f}%)"
      + (": " + ", ".join(f"HTTP {c} ×{n}" for c, n in sorted(codes.items()) if c != "200")
         if bad else ""))
if share > 1:
    print("FAIL: more than 1% of the queries failed")
    sys.exit(1)
EOF
for name in "${died[@]}"; do
  echo "FAIL: $name died during the run; the tail of its log:"
  tail -n 20 "$work/$name.log"
  status=1
done
exit "$status"
