# gRPC front end: the watch feed's diff per round and the cost of a full snapshot.
kubestat_benchmark(grpc_watch_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/grpc_watch_bench.cc
  LIBS kubestat::aggregator kubestat::testing benchmark::benchmark)
# kubestat-grpc-watchers: concurrent Watch streams on a running aggregator, for the soak
# (bench/scripts/soak.sh); the ctest entry only checks that it starts (--help).
kubestat_benchmark(kubestat-grpc-watchers SOURCES ${CMAKE_CURRENT_LIST_DIR}/grpc_watchers.cc
  LIBS kubestat::kube kubestat::core kubestat::proto ARGS --help)
