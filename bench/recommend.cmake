# Recommendations: CPU, bytes read and RSS of computing every recommendation of 1,000 nodes x
# 30 pods from 8 days of hourly usage histograms; disk per node-week.
kubestat_benchmark(recommend_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/recommend_bench.cc
  LIBS kubestat::aggregator kubestat::storage kubestat::windows kubestat::testing)
