# REST front end: rendering cost (Google Benchmark; the protobuf also through libprotobuf's
# generated classes, kubestat/testing/render_protobuf_reference.h, for comparison) and a
# server over a synthetic cluster for the wrk load test (bench/scripts/rest_load.sh).
kubestat_benchmark(rest_render_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/rest_render_bench.cc
  LIBS kubestat::aggregator kubestat::testing benchmark::benchmark)
# The query snapshot's publication: from the unchanged parts against assembled anew.
kubestat_benchmark(snapshot_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/snapshot_bench.cc
  LIBS kubestat::aggregator kubestat::testing)
add_executable(kubestat-rest-fake-server ${CMAKE_CURRENT_LIST_DIR}/rest_fake_server.cc)
# The tests' plain listener and allow-everyone access (kubestat/testing/aggregator/rest_test_access.h).
target_link_libraries(kubestat-rest-fake-server PRIVATE kubestat::aggregator kubestat::testing)
