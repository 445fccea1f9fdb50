#include "write_op_check.h"

#include <string_view>

#include "absl/strings/str_cat.h"
#include "kubestat/core/absl_view.h"

namespace kubestat::apiserver {
namespace {

absl::Status InvalidOp(size_t index, const ObjectKey& key, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("op ", index, ": ", ObjectKeyString(key), ": ", AbslView(why)));
}

}  // namespace

absl::Status CheckWriteOp(size_t index, const WriteOp& op) {
  const ObjectKey& key = op.key;
  if (key.name.empty()) return InvalidOp(index, key, "the key has no name");
  const bool is_pod = key.kind == ObjectKind::kPod;
  if (is_pod && key.namespace_name.empty())
    return InvalidOp(index, key, "a pod key needs a namespace");
  if (!is_pod && !key.namespace_name.empty()) {
    return InvalidOp(index, key, "a node key has no namespace");
  }
  if (op.type != WriteOp::Type::kPut && op.type != WriteOp::Type::kCreate) return absl::OkStatus();
  if (is_pod) {
    if (op.pod == nullptr || op.node != nullptr) {
      return InvalidOp(index, key, "a pod key needs a pod object and no node object");
    }
    if (op.pod->name != key.name || op.pod->namespace_name != key.namespace_name) {
      return InvalidOp(
          index, key,
          absl::StrCat("the object is pods/", op.pod->namespace_name, "/", op.pod->name));
    }
  } else {
    if (op.node == nullptr || op.pod != nullptr) {
      return InvalidOp(index, key, "a node key needs a node object and no pod object");
    }
    if (op.node->name != key.name) {
      return InvalidOp(index, key, absl::StrCat("the object is nodes/", op.node->name));
    }
  }
  return absl::OkStatus();
}

}  // namespace kubestat::apiserver
