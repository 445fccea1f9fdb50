# Quantity parsing and formatting on the API hot path.
kubestat_benchmark(quantity_bench SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/quantity_bench.cc
  LIBS kubestat::apimachinery benchmark::benchmark)
