# Quantity parsing (resource.Quantity strings and JSON tokens from any peer).
kubestat_fuzzer(quantity_fuzz SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/quantity_fuzz.cc
  LIBS kubestat::apimachinery)
