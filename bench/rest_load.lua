-- wrk script for bench/rest_load.sh: an optional aggregate request rate (wrk has no rate
-- option, so each connection waits connections/rate seconds between requests) and a
-- summary with the achieved rate and latency percentiles.
-- Arguments after "--": <target requests per second> <connections>; none = closed loop.
local delay_ms = 0

function init(args)
  local rate = tonumber(args[1])
  local connections = tonumber(args[2])
  if rate ~= nil and rate > 0 and connections ~= nil then
    delay_ms = math.floor(1000 * connections / rate)
  end
end

function delay()
  return delay_ms
end

function done(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format("achieved: %d requests in %.1fs = %.1f req/s, %.1f MB/s\n",
    summary.requests, seconds, summary.requests / seconds, summary.bytes / seconds / 1e6))
  io.write(string.format("errors: connect %d, read %d, write %d, non-2xx %d, timeout %d\n",
    e.connect, e.read, e.write, e.status, e.timeout))
  for _, p in ipairs({50, 90, 99, 99.9}) do
    io.write(string.format("latency p%-5s %9.3f ms\n", tostring(p), latency:percentile(p) / 1000))
  end
  io.write(string.format("latency mean   %9.3f ms, max %.3f ms\n", latency.mean / 1000,
    latency.max / 1000))
end
