# Rollups read back from the store (bytes on disk may be corrupt).
kubestat_fuzzer(rollup_parse_fuzz
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/rollup_parse_fuzz.cc LIBS kubestat::windows)
# Usage histograms (the right-sizing history) read back from the store.
kubestat_fuzzer(usage_histogram_parse_fuzz
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/usage_histogram_parse_fuzz.cc LIBS kubestat::windows)
