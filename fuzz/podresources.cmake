# PodResources responses (bytes from the kubelet's socket).
kubestat_fuzzer(podresources_decode_fuzz
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/podresources_decode_fuzz.cc LIBS kubestat::podresources)
