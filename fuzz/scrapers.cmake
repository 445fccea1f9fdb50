# Fuzz targets for the kubelet payload decoders (scrapers/).
kubestat_fuzzer(summary_decoder_fuzz
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/summary_decoder_fuzz.cc
  LIBS kubestat::scrapers)
kubestat_fuzzer(resource_metrics_decoder_fuzz
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/resource_metrics_decoder_fuzz.cc
  LIBS kubestat::scrapers)
