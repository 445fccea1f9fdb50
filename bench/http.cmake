# kubestat-http-probe: abuse figures (huge body, huge header, a connection flood, connection
# lifetimes) against a kubestat HTTP server; the ctest entry probes an in-process-child
# server (--self) with small counts.
kubestat_benchmark(kubestat-http-probe SOURCES ${CMAKE_CURRENT_LIST_DIR}/http_probe.cc
  LIBS kubestat::http OpenSSL::SSL OpenSSL::Crypto prometheus-cpp::core
  ARGS --self --connections 3000 --hold-seconds 3 --observe-seconds 30
       --body-bytes 268435456 --header-bytes 67108864 --lifetime-connections 20)

# fetch_bench: the HTTP client's CPU and context switches per fetch of a fixed body from a
# forked loopback server.
kubestat_benchmark(fetch_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/fetch_bench.cc
  LIBS kubestat::http ARGS --threads=2 --seconds=1)
