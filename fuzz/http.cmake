# The HTTP server's request parser: every byte a network peer sends before the handler runs.
kubestat_fuzzer(http_request_fuzz SOURCES ${CMAKE_CURRENT_LIST_DIR}/http_request_fuzz.cc
  LIBS kubestat::http)
