# Window engine: ingest cost per sample and per node scrape, query cost, memory per node
# with a full day of windows.
kubestat_benchmark(window_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/window_bench.cc
  LIBS kubestat::windows)
