-- wrk script for bench/scripts/rest_load.sh and bench/scripts/system_load.sh: an optional aggregate request
-- rate and a summary with the achieved rate and latency percentiles.
-- Arguments after "--": <target requests per second> <wrk threads>; none = closed loop.
-- wrk has no rate option: each thread (one Lua state, shared by its connections) keeps a
-- schedule of one request every threads/rate seconds, and each request waits until its
-- slot (not at all when behind), so slow responses do not lower the offered rate as long
-- as the thread has a connection free.
local ffi = require("ffi")
ffi.cdef[[
  typedef struct { long tv_sec; long tv_nsec; } kubestat_timespec;
  int clock_gettime(int clock_id, kubestat_timespec* tp);
]]
local CLOCK_MONOTONIC = 1
local now_ts = ffi.new("kubestat_timespec")

local function now_ms()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, now_ts)
  return tonumber(now_ts.tv_sec) * 1000 + tonumber(now_ts.tv_nsec) / 1e6
end

local interval_ms = 0
local next_ms = nil

function init(args)
  local rate = tonumber(args[1])
  local threads = tonumber(args[2])
  if rate ~= nil and rate > 0 and threads ~= nil then
    interval_ms = 1000 * threads / rate
  end
end

function delay()
  if interval_ms == 0 then return 0 end
  local now = now_ms()
  if next_ms == nil then next_ms = now end
  local wait = next_ms - now
  next_ms = next_ms + interval_ms
  if wait <= 0 then return 0 end
  return math.floor(wait + 0.5)
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
