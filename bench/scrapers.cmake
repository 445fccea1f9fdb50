# Benchmarks for scrapers/: kubelet payload decode speed.
kubestat_benchmark(decode_bench
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/decode_bench.cc
  LIBS kubestat::scrapers benchmark::benchmark)
# Used only to cross-check the generated payloads' shape when the fixtures are present.
target_compile_definitions(decode_bench PRIVATE
  KUBESTAT_BENCH_FIXTURES_DIR="${PROJECT_SOURCE_DIR}/../shared/fixtures")
