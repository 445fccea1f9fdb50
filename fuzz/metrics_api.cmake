# The metrics objects' JSON, read by servers from writers they do not control.
kubestat_fuzzer(metrics_api_parse_fuzz
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/metrics_api_parse_fuzz.cc LIBS kubestat::metrics_api)
# The node agent's /podresources document, read by the aggregator from every node.
kubestat_fuzzer(node_resources_parse_fuzz
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/node_resources_parse_fuzz.cc LIBS kubestat::metrics_api)
