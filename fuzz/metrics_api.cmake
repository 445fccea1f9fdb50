# The metrics objects' JSON, read by servers from writers they do not control.
if(TARGET kubestat_metrics_api)
  kubestat_fuzzer(metrics_api_parse_fuzz
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/metrics_api_parse_fuzz.cc LIBS kubestat::metrics_api)
endif()
# The node agent's /podresources document, read by the aggregator from every node.
if(TARGET kubestat_metrics_api)
  kubestat_fuzzer(node_resources_parse_fuzz
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/node_resources_parse_fuzz.cc LIBS kubestat::metrics_api)
endif()
