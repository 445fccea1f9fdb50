#include "kubestat/aggregator/ingest/workload_history.h"

namespace kubestat::aggregator {
namespace {

void AppendField(std::string* out, std::string_view field) {
  out->append(field);
  out->push_back('\0');
}

}  // namespace

limits::Workload HistoryWorkload(const PodWorkloads* workloads, std::string_view namespace_name,
                                 std::string_view pod) {
  if (workloads != nullptr) {
    if (std::optional<limits::Workload> w = workloads->WorkloadOfPod(namespace_name, pod)) {
      return *std::move(w);
    }
  }
  return limits::Workload{"Pod", std::string(pod)};
}

std::string HistoryNamespacePrefix(std::string_view namespace_name) {
  std::string out;
  if (!namespace_name.empty()) AppendField(&out, namespace_name);
  return out;
}

std::string HistoryWorkloadPrefix(std::string_view namespace_name,
                                  const limits::Workload& workload) {
  std::string out;
  AppendField(&out, namespace_name);
  AppendField(&out, workload.kind);
  AppendField(&out, workload.name);
  return out;
}

std::string HistoryOwner(std::string_view namespace_name, const limits::Workload& workload,
                         std::string_view container, windows::Resource resource) {
  std::string out = HistoryWorkloadPrefix(namespace_name, workload);
  AppendField(&out, container);
  AppendField(&out, windows::ResourceName(resource));
  return out;
}

}  // namespace kubestat::aggregator
