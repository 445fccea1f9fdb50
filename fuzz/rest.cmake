# REST front end: request routing, path/query decoding and selectors over arbitrary bytes.
kubestat_fuzzer(rest_handler_fuzz SOURCES ${CMAKE_CURRENT_LIST_DIR}/rest_handler_fuzz.cc
  LIBS kubestat::aggregator)
