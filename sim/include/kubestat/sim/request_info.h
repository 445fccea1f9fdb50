// What an HTTP request to the fake kube-apiserver asks to do, derived from its method, path
// and query as kube-apiserver's RequestInfoFactory derives it
// (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go):
//
//   GET  /api/v1/nodes                         list nodes (group "", cluster scope)
//   GET  /api/v1/nodes?watch=true              watch nodes
//   GET  /api/v1/namespaces/shop/pods/web-1    get pods "web-1" in namespace shop
//   GET  /api/v1/namespaces/shop/pods?fieldSelector=metadata.name%3Dweb-1
//                                              list pods, name "web-1"
//   GET  /api/v1/watch/namespaces/shop/pods    watch pods in shop
//   POST /apis/authentication.k8s.io/v1/tokenreviews      create tokenreviews
//   GET  /apis/metrics.k8s.io/v1beta1/namespaces/a/pods   list pods (group metrics.k8s.io)
//   GET  /api, /apis/metrics.k8s.io, /healthz, /sim/v1/faults
//                                              non-resource: verb is the lower-case method
//
// Resource requests need /api/<version>/<resource>… or /apis/<group>/<version>/<resource>…;
// anything shorter or elsewhere is a non-resource request. "namespaces/<ns>/<resource>"
// sets the namespace (a namespace's own object keeps its name as the namespace, as in
// Kubernetes); the parts after the resource are name and subresource. A GET without a name
// is "list", or "watch" with ?watch=<anything but false/0>; a DELETE without a name is
// "deletecollection". Pure; thread-safe.
#ifndef KUBESTAT_SIM_REQUEST_INFO_H_
#define KUBESTAT_SIM_REQUEST_INFO_H_

#include <string>
#include <string_view>

namespace kubestat::sim {

struct RequestInfo {
  bool is_resource_request = false;
  // The URL path as given (percent-decoded by the caller).
  std::string path;
  // Resource requests: get, list, watch, create, update, patch, delete, deletecollection,
  // proxy. Non-resource requests: the lower-case HTTP method.
  std::string verb;
  // Resource requests only; "" where the request names none.
  std::string api_group;  // "" is the core group
  std::string api_version;
  std::string namespace_name;  // "" is cluster scope
  std::string resource;        // plural: "pods"
  std::string subresource;     // "status", "log", …
  std::string name;

  bool operator==(const RequestInfo&) const = default;
};

// `path` is the decoded URL path ("/api/v1/nodes"); `raw_query` the undecoded query string
// without '?' ("watch=true&fieldSelector=metadata.name%3Dx").
RequestInfo ParseRequestInfo(std::string_view method, std::string_view path,
                             std::string_view raw_query);

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_REQUEST_INFO_H_
