// The namespaced objects the simulator's fake kube-apiserver keeps as it was given them:
// LimitRanges (core/v1, their `spec`) and ConfigMaps (core/v1, their `data`). Each is kept
// with its content as the JSON it was given (minified), without interpreting it: what a
// LimitRange or the cluster's published trust means is the business of the code under test,
// not of the simulator.
#ifndef KUBESTAT_SIM_SRC_STORED_OBJECTS_H_
#define KUBESTAT_SIM_SRC_STORED_OBJECTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"

namespace kubestat::sim {

// What differs between the kinds kept.
struct StoredKind {
  std::string_view kind;      // "LimitRange"
  std::string_view resource;  // "limitranges"
  std::string_view content;   // the member kept: "spec" or "data"
};
inline constexpr StoredKind kLimitRanges{"LimitRange", "limitranges", "spec"};
inline constexpr StoredKind kConfigMaps{"ConfigMap", "configmaps", "data"};

struct StoredObject {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string content_json;  // LimitRange: {"limits":[...]}; ConfigMap: {"key":"value",...}
  Timestamp created;
};

// The LimitRanges a simulated cluster starts with: "limits" in namespace shop (Container
// cpu 50m..1, memory 64Mi..512Mi, cpu limit/request at most 4; Pod memory at most 1Gi).
std::vector<StoredObject> DefaultLimitRanges(Timestamp created);

// The ConfigMap kube-system/extension-apiserver-authentication as kube-apiserver publishes
// it for a front proxy whose CA is `front_proxy_ca_pem` and whose client certificate is
// named front-proxy-client: requestheader-client-ca-file, requestheader-allowed-names,
// requestheader-username-headers, -group-headers and -extra-headers-prefix (the headers the
// proxy sends). No client-ca-file: the simulated cluster's users carry tokens.
StoredObject ExtensionAuthenticationConfigMap(std::string_view front_proxy_ca_pem,
                                              Timestamp created);

// A UUID-shaped uid made from a hash.
std::string StoredObjectUid(uint64_t hash);

// The content of a PUT body: the object ({"spec":{...}} or {"data":{...}}, ...) or its
// content alone. InvalidArgument for a body that is not a JSON object, a LimitRange without
// a `limits` array, a ConfigMap whose data is not an object of strings; the content comes
// back minified.
[[nodiscard]] absl::StatusOr<std::string> ParseStoredContent(const StoredKind& kind,
                                                             std::string_view body);

// The object as kube-apiserver serves it.
void AppendStoredObjectJson(std::string& out, const StoredKind& kind, const StoredObject& object,
                            uint64_t resource_version);

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_STORED_OBJECTS_H_
