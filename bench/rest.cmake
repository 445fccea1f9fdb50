# REST front end: rendering cost (Google Benchmark; the protobuf also through libprotobuf's
# generated classes, tests/support/render_protobuf_reference.h, for comparison) and a server
# over a synthetic cluster for the wrk load test (bench/rest_load.sh).
kubestat_benchmark(rest_render_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/rest_render_bench.cc
  LIBS kubestat::aggregator kubestat_test_render_protobuf_reference benchmark::benchmark)
# The query snapshot's publication: from the unchanged parts against assembled anew.
kubestat_benchmark(snapshot_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/snapshot_bench.cc
  LIBS kubestat::aggregator)
target_include_directories(snapshot_bench PRIVATE ${PROJECT_SOURCE_DIR}/tests/aggregator)
add_executable(kubestat-rest-fake-server ${CMAKE_CURRENT_LIST_DIR}/rest_fake_server.cc)
target_link_libraries(kubestat-rest-fake-server PRIVATE kubestat::aggregator)
# The tests' plain listener and allow-everyone access (rest_test_access.h).
target_include_directories(kubestat-rest-fake-server PRIVATE ${PROJECT_SOURCE_DIR}/tests/aggregator)
