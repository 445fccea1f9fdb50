# The simulator's podresources sockets read GetPodResourcesRequest bytes from any local client.
kubestat_fuzzer(sim_podresources_request_fuzz
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/sim_podresources_request_fuzz.cc LIBS kubestat::sim)
