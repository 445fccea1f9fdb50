// Fuzzes the bridge's reader of the metrics API server's list pages (a server it does not
// control): arbitrary bytes as a node list and as a pod list. Keys it returns have a name
// (and a namespace, for pods).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "kubestat/bridge/list_page.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  for (kubestat::metrics_api::Resource resource :
       {kubestat::metrics_api::Resource::kNodes, kubestat::metrics_api::Resource::kPods}) {
    std::vector<kubestat::bridge::ObjectKey> keys;
    std::string token;
    if (kubestat::bridge::ReadListPage(body, resource, &keys, &token).ok()) {
      for (const kubestat::bridge::ObjectKey& key : keys) {
        if (key.name.empty()) abort();
        if (resource == kubestat::metrics_api::Resource::kPods && key.namespace_name.empty()) {
          abort();
        }
      }
    }
  }
  return 0;
}
