# JSON writing and RFC 3339 parsing, the core of every response and every decoded payload.
kubestat_benchmark(json_writer_bench SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/json_writer_bench.cc
  LIBS kubestat::core kubestat::apimachinery benchmark::benchmark_main)
