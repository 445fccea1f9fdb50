#!/usr/bin/env bash
# The whole pod list asked for gzip-compressed, over and over, while scrape rounds publish new
# snapshots: scripts/demo.sh (kubestat-sim with NODES nodes x 30 pods, the aggregator, the
# secondary API server, the bridge and the node agents, with the demo's flags) is started from
# BUILD_DIR, then REQUESTS requests for /apis/metrics/v1alpha1/pods with
# `Accept-Encoding: gzip` are sent by four clients at once, alternately straight to the
# aggregator and through the simulated kube-apiserver's aggregation proxy, as the demo's admin.
# Every answer must be 200, decompress where it says `Content-Encoding: gzip` (a list under
# the compression threshold, before the first round, comes as it is), parse as JSON and hold
# a PodMetricsList of named pods; the aggregator must still be running at the end.
# Prints one line per bad answer and a summary; exits 1 when any answer was bad or the
# aggregator died.
#
#   bench/scripts/gzip_probe.sh [BUILD_DIR] [NODES] [REQUESTS]
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-build}" && pwd)"
nodes="${2:-100}"
requests="${3:-100}"
source "$here/lib.sh"
for b in sim/kubestat-sim aggregator/kubestat-aggregator apiserver/kubestat-apiserver \
  bridge/kubestat-bridge agent/kubestat-node-agent; do
  [[ -x "$build/$b" ]] || { echo "build $build/$b first" >&2; exit 1; }
done

bench_init gzip-probe
port=$(free_port)
KUBESTAT_BUILD_DIR="$build" setsid "$here/../../scripts/demo.sh" --nodes "$nodes" --port "$port" \
  --grpc-port "$(free_port)" --apiserver-port "$(free_port)" --agent-port "$(free_port)" \
  >"$work/demo.out" 2>&1 &
pids+=($!)
# The requests start as soon as the aggregator is ready, while its first rounds scrape and
# publish (the demo goes on starting the secondary API server and the bridge meanwhile).
agg_pid=""
for _ in $(seq 3000); do
  agg_pid=$(pgrep -f "kubestat-aggregator .*--secure-port=$port" || true)
  [[ -n "$agg_pid" ]] && break
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$work/demo.out"; exit 1; }
  sleep 0.2
done
[[ -n "$agg_pid" ]] || { tail -n 20 "$work/demo.out"; exit 1; }
demo=$(tr '\0' '\n' <"/proc/$agg_pid/cmdline" | sed -n 's/^--storage-dir=\(.*\)\/store$/\1/p')
for _ in $(seq 600); do
  curl -fs --cacert "$demo/aggregator-certs/apiserver.crt" "https://127.0.0.1:$port/readyz" \
    >/dev/null 2>&1 && break
  kill -0 "$agg_pid" 2>/dev/null || { cat "$demo/aggregator.log"; exit 1; }
  sleep 0.1
done
token=$(cat "$demo/admin.token")
proxy=$(sed -n 's/^ *server: *//p' "$demo/kubeconfig" | head -n 1)
echo "aggregator ready ($nodes nodes, demo work $demo); pid $agg_pid; proxy $proxy"

# One request: TARGET is "direct" or "proxy"; keeps the body and the head as
# $work/answer.N.{gz,head} for check below, or prints why there is none.
ask() {
  local target="$1" n="$2" out="$work/answer.$2" url ca rc=0
  if [[ "$target" == direct ]]; then
    url="https://127.0.0.1:$port"
    ca="$demo/aggregator-certs/apiserver.crt"
  else
    url="$proxy"
    ca="$demo/sim-tls/apiserver-ca.crt"
  fi
  echo "$target" >"$out.target"
  curl -s --cacert "$ca" -H "Authorization: Bearer $token" -H "Accept-Encoding: gzip" \
    -o "$out.gz" -D "$out.head" "$url/apis/metrics/v1alpha1/pods" || rc=$?
  ((rc == 0)) || echo "request $n ($target): curl exit $rc"
}

# Whether answer N is good: prints nothing if so, else why not.
check() {
  local n="$1" out="$work/answer.$1" target code
  target=$(cat "$out.target")
  [[ -s "$out.head" ]] || return 0  # the request failed, and said so
  code=$(sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' "$out.head")
  if [[ "$code" != 200 ]]; then
    echo "request $n ($target): code $code: $(head -c 200 "$out.gz" | tr -c '[:print:]' '.')"
    return
  fi
  if grep -qi '^content-encoding: *gzip' "$out.head"; then
    gzip -dc <"$out.gz" >"$out.json" 2>/dev/null || {
      echo "request $n ($target): not gzip, starts $(head -c 16 "$out.gz" | od -An -tx1 | tr -d ' \n')"
      return
    }
  elif grep -qi '^content-encoding:' "$out.head"; then
    echo "request $n ($target): $(grep -i '^content-encoding:' "$out.head" | tr -d '\r')"
    return
  else
    mv "$out.gz" "$out.json"  # under the compression threshold: sent as it is
  fi
  python3 - "$out.json" "$n" "$target" <<'EOF'
import json, sys
what = f"request {sys.argv[2]} ({sys.argv[3]})"
try:
    body = json.load(open(sys.argv[1]))
except ValueError as e:
    print(f"{what}: not JSON: {e}")
    sys.exit()
items = body.get("items") if body.get("kind") == "PodMetricsList" else None
if items is None or any(not i.get("metadata", {}).get("name") for i in items):
    print(f"{what}: not a PodMetricsList of named pods")
    sys.exit()
print(len(items), file=open(sys.argv[1] + ".count", "w"))
EOF
  rm -f "$out.json"
}

# Four clients, each alternating between the aggregator and the proxy. The answers are
# checked once all are in, so that checking takes no CPU from the aggregator meanwhile.
client() {
  local first="$1"
  for ((n = first; n < requests; n += 4)); do
    if ((n / 4 % 2 == 0)); then ask direct "$n"; else ask proxy "$n"; fi
    kill -0 "$agg_pid" 2>/dev/null || { echo "request $n: the aggregator is gone"; return; }
  done
}
clients=()
for c in 0 1 2 3; do
  client "$c" >"$work/bad.$c" 2>&1 &
  clients+=($!)
done
wait "${clients[@]}"
alive=yes
kill -0 "$agg_pid" 2>/dev/null || alive=no
for ((n = 0; n < requests; n++)); do check "$n"; done >"$work/bad.check"
cat "$work"/bad.*
bad=$(cat "$work"/bad.* | grep -c . || true)
pods=$(cat "$work"/answer.*.count 2>/dev/null | sort -n | uniq -c |
  awk '{printf "%s%s x %s pods", s, $1, $2; s=", "}')
rounds=$(grep -c "round [0-9]*:" "$demo/aggregator.log" || true)
echo "gzip pod lists: $((requests - bad)) of $requests valid ($pods); aggregator alive: $alive;" \
  "scrape rounds logged: $rounds"
[[ "$bad" == 0 && "$alive" == yes ]]
