#!/usr/bin/env bash
# The health listener flooded, as an operator would see it: kubestat-sim (NODES nodes × 30
# pods) scraped by kubestat-aggregator with --health-port, then for SECONDS a flood of that
# port from loopback, with no credentials (none are needed there), kept at CONNECTIONS open
# connections: a third send nothing, a third send part of a TLS record and stop, a third send
# a TLS ClientHello's first bytes one at a time, and each is replaced as soon as the server
# closes it. Meanwhile a prober asks /livez and /readyz every second the way the kubelet does
# (a new connection, 1 s to answer, the manifests' timeoutSeconds being 5). Prints how many
# probes were answered 200 in time, the listener's connection counters and the aggregator's
# RSS and rounds.
#
#   bench/scripts/health_flood.sh [BUILD_DIR] [NODES] [CONNECTIONS] [SECONDS]
# KUBESTAT_AGGREGATOR names another aggregator binary (an earlier build, to compare).
set -euo pipefail

build="${1:-build}"
nodes="${2:-100}"
connections="${3:-300}"
seconds="${4:-20}"
sim="$build/sim/kubestat-sim"
agg="${KUBESTAT_AGGREGATOR:-$build/aggregator/kubestat-aggregator}"
source "$(dirname "$0")/lib.sh"
for b in "$sim" "$agg"; do [[ -x "$b" ]] || { echo "build $b first" >&2; exit 1; }; done

bench_init health-flood
port=$(free_port)
health_port=$(free_port)
start_sim "$sim" --nodes="$nodes" --pods-per-node=30
bench_user prober '- users: [prober]' '  verbs: [get]' '  nonResourceURLs: [/metrics]'
start_aggregator "$agg" "$port" --health-port="$health_port"
for _ in $(seq 300); do
  curl -kfs "https://127.0.0.1:$health_port/readyz" >/dev/null 2>&1 &&
    grep -q "round 1:" "$work/aggregator.log" && break
  sleep 0.2
done
grep -q "round 1:" "$work/aggregator.log" || { tail "$work/aggregator.log"; exit 1; }
echo "aggregator RSS before: $(rss_kib "$agg_pid") KiB"

python3 - "$health_port" "$connections" "$seconds" <<'EOF' &
import asyncio, sys, time
port, target, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
# The first bytes of a TLS 1.2 ClientHello record (handshake, version, a length it never fills).
hello = bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03])
opened = 0
async def one(kind):
    global opened
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        await asyncio.sleep(0.05)
        return
    opened += 1
    try:
        if kind == 1:
            writer.write(hello[:5])
        await writer.drain()
        end = time.monotonic() + seconds
        sent = 0
        while time.monotonic() < end:
            if kind == 2 and sent < len(hello):
                writer.write(hello[sent:sent + 1])
                sent += 1
                await writer.drain()
            try:
                if await asyncio.wait_for(reader.read(1024), 0.5) == b"":
                    break  # closed by the server
            except asyncio.TimeoutError:
                pass
    except OSError:
        pass
    finally:
        writer.close()
async def slot(i, end):
    while time.monotonic() < end:
        await one(i % 3)
async def main():
    end = time.monotonic() + seconds
    await asyncio.gather(*(slot(i, end) for i in range(target)))
    print(f"flood: {opened} connections opened over {seconds:.0f}s, {target} kept open")
asyncio.run(main())
EOF
flood_pid=$!
pids+=("$flood_pid")

ok=0
asked=0
end=$((SECONDS + seconds))
while ((SECONDS < end)); do
  for path in /livez /readyz; do
    asked=$((asked + 1))
    if curl -kfs --max-time 1 "https://127.0.0.1:$health_port$path" >/dev/null 2>&1; then
      ok=$((ok + 1))
    fi
  done
  sleep 1
done
wait "$flood_pid" || true
echo "probes answered 200 within 1 s: $ok of $asked"
echo "aggregator RSS after: $(rss_kib "$agg_pid") KiB"
echo "health listener connections:"
curl -kfs -H "Authorization: Bearer $token" "https://127.0.0.1:$port/metrics" |
  grep -E '^kubestat_http_connections_total\{.*listener="health"' || true
echo "rounds during the flood:"
grep "round" "$work/aggregator.log" | tail -n 4
