# Label and field selectors: the labelSelector / fieldSelector query parameters.
kubestat_fuzzer(label_selector_fuzz
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/label_selector_fuzz.cc
  LIBS kubestat::apimachinery)
kubestat_fuzzer(field_selector_fuzz
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/field_selector_fuzz.cc
  LIBS kubestat::apimachinery)
