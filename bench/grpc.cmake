# gRPC front end: the watch feed's diff per round and the cost of a full snapshot.
if(TARGET kubestat_aggregator)
  kubestat_benchmark(grpc_watch_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/grpc_watch_bench.cc
    LIBS kubestat::aggregator benchmark::benchmark)
  target_include_directories(grpc_watch_bench PRIVATE ${PROJECT_SOURCE_DIR}/tests)
endif()
