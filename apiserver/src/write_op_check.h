// The checks every ObjectStore makes of a WriteOp before looking at what is stored: the
// key's shape and the object a kPut/kCreate carries (object_store.h, memory_store.h).
#ifndef KUBESTAT_APISERVER_SRC_WRITE_OP_CHECK_H_
#define KUBESTAT_APISERVER_SRC_WRITE_OP_CHECK_H_

#include <cstddef>

#include "absl/status/status.h"
#include "kubestat/apiserver/object_store.h"

namespace kubestat::apiserver {

// OK, or InvalidArgument "op <index>: <key>: <why>": the key has no name, a node key has a
// namespace or a pod key has none, or a kPut/kCreate does not carry exactly the object its
// key's kind needs, with the key's name (and namespace).
[[nodiscard]] absl::Status CheckWriteOp(size_t index, const WriteOp& op);

}  // namespace kubestat::apiserver

#endif  // KUBESTAT_APISERVER_SRC_WRITE_OP_CHECK_H_
