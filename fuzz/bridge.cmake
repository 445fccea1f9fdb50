# The bridge's reader of the metrics API server's list pages.
kubestat_fuzzer(bridge_list_page_fuzz SOURCES ${CMAKE_CURRENT_LIST_DIR}/bridge_list_page_fuzz.cc
  LIBS kubestat::bridge)
