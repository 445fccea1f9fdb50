// Reading one page of the metrics API server's list (metrics/v1alpha1 NodeMetricsList or
// PodMetricsList JSON, from a server the bridge does not control): the keys of its objects
// and its continue token. Used by the resync after each snapshot.
//
// Errors: InvalidArgument for a body that is not JSON, whose items are neither an array nor
// null, or an item without a metadata.name (or a metadata.namespace, for pods), or with an
// empty one. Never throws.
// Thread-safety: a pure function.
#ifndef KUBESTAT_BRIDGE_LIST_PAGE_H_
#define KUBESTAT_BRIDGE_LIST_PAGE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/bridge/push_queue.h"
#include "kubestat/metrics_api/group_version.h"

namespace kubestat::bridge {

// Appends the page's keys (of `resource`) to *keys and sets *continue_token ("" at the end).
[[nodiscard]] absl::Status ReadListPage(const std::string& body, metrics_api::Resource resource,
                                        std::vector<ObjectKey>* keys, std::string* continue_token);

}  // namespace kubestat::bridge

#endif  // KUBESTAT_BRIDGE_LIST_PAGE_H_
