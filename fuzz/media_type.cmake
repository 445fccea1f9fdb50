# Accept headers from any client: content negotiation of the metrics answers.
kubestat_fuzzer(media_type_fuzz SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/media_type_fuzz.cc
  LIBS kubestat::apimachinery)
