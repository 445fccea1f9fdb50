# RFC 3339 times and Go durations (kubelet timestamps, flag and query values).
kubestat_fuzzer(rfc3339_fuzz SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/rfc3339_fuzz.cc
  LIBS kubestat::core)
# JSON string escaping of arbitrary bytes, checked with an independent parser.
kubestat_fuzzer(json_writer_fuzz SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/json_writer_fuzz.cc
  LIBS kubestat::core simdjson::simdjson)
