// What a request asks to do, in the terms authorization uses (authorizer.Attributes),
// derived from the HTTP method, path and query as kube-apiserver's RequestInfoFactory does.
//
// Resource requests are paths under /api/{version}/… and /apis/{group}/{version}/… with at
// least a resource after the version:
//   /apis/metrics.k8s.io/v1beta1/nodes                  list nodes        (cluster scope)
//   /apis/metrics.k8s.io/v1beta1/nodes/n1               get nodes n1
//   /apis/metrics.k8s.io/v1beta1/pods                   list pods         (all namespaces)
//   /apis/metrics.k8s.io/v1beta1/namespaces/ns/pods     list pods in ns
//   /apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/p   get pods p in ns
//   /apis/g/v/watch/pods, /apis/g/v/proxy/…             the verb is the path segment
//   …/pods/p/status                                     subresource "status"
// Verbs: GET and HEAD → get on a named object, otherwise list, or watch when the query has
// `watch` with any value but "0" or "false" (any case, as Kubernetes decodes booleans);
// POST → create, PUT → update, PATCH → patch, DELETE → delete on a named object,
// deletecollection otherwise; any other method → "" (nothing grants it). A list or watch
// whose `fieldSelector` requires `metadata.name=<n>` carries name n, as upstream.
// /api/v1/namespaces/ns is the resource "namespaces" named "ns".
//
// Everything else (/, /api, /api/v1, /apis, /apis/{group}, /apis/{group}/{version}
// discovery, /metrics, /healthz, /openapi/v2, …) is a non-resource request whose verb is the
// lowercased method ("get", "post", "put", "delete", …) and whose path is the decoded path.
//
// Paths and query parameters are percent-decoded ('+' in the query is a space). Errors
// (InvalidArgument, for a 400; the message quotes no more than the offending escape):
//   - a path that does not start with '/';
//   - a malformed percent escape ("%4", "%zz") in the path or query;
//   - a segment that decodes to "." or "..", or that holds an encoded '/' or a NUL: routing
//     and authorization must see the same segments, so such paths are refused rather than
//     normalized;
//   - a resource path with nothing after a special verb ("/apis/g/v/watch").
// Pure functions; thread-safe.
#ifndef KUBESTAT_KUBE_REQUEST_ATTRIBUTES_H_
#define KUBESTAT_KUBE_REQUEST_ATTRIBUTES_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kubestat::kube {

struct RequestAttributes {
  // True for /api and /apis resource paths (see the file comment).
  bool resource_request = false;
  // Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection,
  // proxy; for non-resource requests the lowercased method.
  std::string verb;
  // Decoded request path (always set).
  std::string path;

  // Resource requests only ("" otherwise). api_group is "" for the core group (/api).
  std::string api_group;
  std::string api_version;
  std::string namespace_name;  // "" for cluster-scoped and all-namespace requests
  std::string resource;        // plural: "nodes", "pods"
  std::string subresource;
  std::string name;

  bool operator==(const RequestAttributes&) const = default;
};

// Derives the attributes of a request. `method` is the HTTP method (any case), `raw_path`
// the path as received (still percent-encoded, without the query), `raw_query` the text
// after '?' (without it; may be empty).
[[nodiscard]] absl::StatusOr<RequestAttributes> ParseRequestAttributes(std::string_view method,
                                                                       std::string_view raw_path,
                                                                       std::string_view raw_query);

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_REQUEST_ATTRIBUTES_H_
