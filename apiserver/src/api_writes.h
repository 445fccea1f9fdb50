// The API server's writes (metrics/v1alpha1 only): create, put and delete of one object, the
// bulk write the bridge sends, and the expiry of objects not written for a while; each counted
// by operation and answer code. Private to apiserver/src.
// Thread-safe: borrows the store, the clock and the timer, which must outlive it.
#ifndef KUBESTAT_APISERVER_SRC_API_WRITES_H_
#define KUBESTAT_APISERVER_SRC_API_WRITES_H_

#include <prometheus/counter.h>

#include <variant>

#include "api_request.h"

namespace kubestat::apiserver::internal {

class ApiWrites {
 public:
  ApiWrites(ObjectStore& store, const Clock& clock, StoreTimer& timer,
            prometheus::Registry& registry);

  // POST to a collection (kCreate) or PUT to an object (kPut).
  http::Response WriteOne(const http::Request& request, const Target& t, WriteOp::Type type);
  http::Response Delete(const Target& t);
  // POST /apis/metrics/v1alpha1/writes.
  http::Response WriteBatch(const http::Request& request);
  // Removes the objects not written for `ttl`.
  void Expire(Timestamp now, Duration ttl);

 private:
  // The object in a write's body, checked against the URL. 422 for a body that does not
  // read as a metrics/v1alpha1 object, 400 for a name or namespace other than the URL's.
  std::variant<WriteOp, ApiError> ReadObject(const http::Request& request, const Target& t,
                                             WriteOp::Type type);
  http::Response Counted(std::string_view operation, http::Response response);

  ObjectStore& store_;
  const Clock& clock_;
  StoreTimer& timer_;
  prometheus::Family<prometheus::Counter>& writes_;
};

}  // namespace kubestat::apiserver::internal

#endif  // KUBESTAT_APISERVER_SRC_API_WRITES_H_
