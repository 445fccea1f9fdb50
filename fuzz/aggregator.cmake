# Rollups read back from the store (bytes on disk may be corrupt).
if(TARGET kubestat_windows)
  kubestat_fuzzer(rollup_parse_fuzz
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/rollup_parse_fuzz.cc LIBS kubestat::windows)
endif()
# Usage histograms (the right-sizing history) read back from the store.
if(TARGET kubestat_windows)
  kubestat_fuzzer(usage_histogram_parse_fuzz
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/usage_histogram_parse_fuzz.cc LIBS kubestat::windows)
endif()
