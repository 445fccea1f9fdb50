# Authentication and authorization inputs from the network: TokenReview and
# SubjectAccessReview responses, request paths and queries, token files; watch event lines,
# Status objects and object metadata read from the kube API.
kubestat_fuzzer(kube_review_fuzz SOURCES ${CMAKE_CURRENT_LIST_DIR}/kube_review_fuzz.cc
  LIBS kubestat::kube)
kubestat_fuzzer(kube_watch_event_fuzz SOURCES ${CMAKE_CURRENT_LIST_DIR}/kube_watch_event_fuzz.cc
  LIBS kubestat::kube)
