# Ingest pipeline (store + windows): CPU per node scrape, memory and disk per node with a
# day of windows, rebuild time, p95 error against exact.
kubestat_benchmark(ingest_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/ingest_bench.cc
  LIBS kubestat::aggregator kubestat::storage kubestat::sim kubestat::scrapers kubestat::testing)
