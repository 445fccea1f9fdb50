# kubestat-sim: render cost per node and the implied CPU for 1,000 nodes at 10 s.
kubestat_benchmark(kubestat_sim_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/sim_bench.cc
  LIBS kubestat::sim benchmark::benchmark)
