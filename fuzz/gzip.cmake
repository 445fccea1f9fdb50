# gzip decoding of arbitrary bytes and Accept-Encoding headers from any client.
kubestat_fuzzer(gzip_fuzz SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/gzip_fuzz.cc LIBS kubestat::core)
