// Which encoding an answer about metric objects takes, from the request's Accept header
// (apimachinery/media_type.h): JSON always; the Kubernetes protobuf encoding (render_protobuf.h)
// too for metrics.k8s.io objects and lists. So client-go's "application/vnd.kubernetes.protobuf,
// */*" gets protobuf from metrics.k8s.io and JSON from metrics/v1alpha1, "*/*" or no Accept
// gets JSON, and an Accept that admits none of what is offered gets a 406 NotAcceptable
// Status (as kube-apiserver answers it).
//
// Discovery documents, Status errors and watch streams are JSON whatever the Accept (client-go
// decodes a body by its Content-Type, so a protobuf client reads a JSON Status).
//
// Thread-safety: pure functions; safe from any thread.
#ifndef KUBESTAT_METRICS_API_ENCODING_H_
#define KUBESTAT_METRICS_API_ENCODING_H_

#include <optional>
#include <string_view>

#include "kubestat/apimachinery/api_error.h"
#include "kubestat/metrics_api/group_version.h"

namespace kubestat::metrics_api {

enum class Encoding { kJson, kProtobuf };

// "application/json" / "application/vnd.kubernetes.protobuf".
std::string_view ContentType(Encoding encoding);

// Whether objects and lists of `gv` have a protobuf form (metrics.k8s.io).
inline bool HasProtobuf(GroupVersion gv) { return IsMetricsK8sIo(gv); }

// The encoding of an answer to `accept` (the header's value; empty when absent) when JSON and,
// if `protobuf_offered`, protobuf can be written; std::nullopt when `accept` admits neither.
std::optional<Encoding> NegotiateEncoding(std::string_view accept, bool protobuf_offered);

// The 406 Status for an Accept NegotiateEncoding refused, naming what is offered:
// "only the following media types are accepted: application/json, ...".
ApiError NotAcceptable(bool protobuf_offered);

}  // namespace kubestat::metrics_api

#endif  // KUBESTAT_METRICS_API_ENCODING_H_
