// The API server's reads: GET of one object and LIST, at the resourceVersion asked for, in
// JSON or (metrics.k8s.io) protobuf. Private to apiserver/src.
// Thread-safe: borrows the store, the clock and the timer, which must outlive it.
#ifndef KUBESTAT_APISERVER_SRC_API_READS_H_
#define KUBESTAT_APISERVER_SRC_API_READS_H_

#include "api_request.h"

namespace kubestat::apiserver::internal {

class ApiReads {
 public:
  ApiReads(ObjectStore& store, const Clock& clock, StoreTimer& timer)
      : store_(store), clock_(clock), timer_(timer) {}

  http::Response GetOne(const Target& t, const metrics_api::QueryParams& params, int indent,
                        Encoding encoding);
  http::Response List(const Target& t, const metrics_api::QueryParams& params, int indent,
                      Encoding encoding);

 private:
  ObjectStore& store_;
  const Clock& clock_;
  StoreTimer& timer_;
};

}  // namespace kubestat::apiserver::internal

#endif  // KUBESTAT_APISERVER_SRC_API_READS_H_
