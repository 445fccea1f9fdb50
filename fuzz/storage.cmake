# Scrape blobs read back from the store (bytes on disk may be corrupt).
kubestat_fuzzer(scrape_blob_fuzz
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/scrape_blob_fuzz.cc LIBS kubestat::storage)
